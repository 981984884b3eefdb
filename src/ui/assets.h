// The web page's files, embedded in the binary at build time (src/ui/CMakeLists.txt writes
// assets.cc from src/ui/assets/ and Debian's Chart.js), so the binary serves the page with no
// file or network access at run time.
//
// Thread-safety: immutable.
#ifndef MODELMETRICS_UI_ASSETS_H_
#define MODELMETRICS_UI_ASSETS_H_

#include <span>
#include <string_view>

namespace modelmetrics::ui {

struct Asset {
  std::string_view path;  // the URL path it is served at
  std::string_view content_type;
  std::string_view body;
};

std::span<const Asset> Assets();

}  // namespace modelmetrics::ui

#endif  // MODELMETRICS_UI_ASSETS_H_
