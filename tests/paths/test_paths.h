// Where the tests and benchmarks find their files: the shared fixtures and specs, the source
// tree, the build tree and the built `modelmetrics` binary.
//
// The folders are compiled into one translation unit (test_paths.cc) and nowhere else, so no
// other test or benchmark source carries a clone's absolute path: the compiler cache serves every
// other object to a clone of the same commit in another folder.
#pragma once

#include <string>
#include <string_view>

namespace modelmetrics::test_paths {

// MODELMETRICS_SHARED_DIR (default ../shared) joined with `relative`.
std::string Shared(std::string_view relative);
// The repository's root joined with `relative`.
std::string Source(std::string_view relative);
// The CMake build tree joined with `relative`.
std::string Binary(std::string_view relative);
// The `modelmetrics` binary of this build tree.
std::string Modelmetrics();
// A file of tests/testdata/tls/ (the test certificates and keys).
std::string Tls(std::string_view name);
// A path in the temporary folder no other process and no other call uses: `stem` with this
// process's id and a per-process counter. ctest runs test processes in parallel (and the sanitizer
// trees beside the main one), so a fixed name there is a race between them.
std::string ScratchFile(std::string_view stem);

}  // namespace modelmetrics::test_paths
