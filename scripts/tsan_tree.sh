# The ThreadSanitizer tree (sourced, not run): which suites run under TSan and how, in one place
# for scripts/test.sh (every suite once) and scripts/stress.sh (every suite many times, under load).
#   tsan_suites               the threaded suites, as paths under build-tsan/tests
#   build_tsan_tree JOBS      configures build-tsan (clang, -O0 with line tables: half gcc's -O1
#                             compile time, and the suites run as fast) and builds the suites and
#                             the CLI they start
#   run_tsan_suite SUITE LOG  runs one suite, its output to LOG; stops at the first report, and
#                             fails a suite that hangs (10 min; the slowest takes 30 s under load)
tsan_suites=(net/net_tests metrics/metrics_tests pipeline/pipeline_tests
  aggregation/aggregation_tests kube/kube_tests apiserver/api_server_tests
  deployment/deployment_integration_tests sim/sim_tests ui/ui_tests)

build_tsan_tree() {
  CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DMODELMETRICS_SANITIZE=thread -DMODELMETRICS_BENCH=OFF -DMODELMETRICS_PYTHON=OFF
  ninja -C build-tsan -j "$1" modelmetrics "${tsan_suites[@]##*/}"
}

run_tsan_suite() {
  TSAN_OPTIONS=halt_on_error=1 timeout --kill-after=10s 600 "./build-tsan/tests/$1" \
    --gtest_brief=1 >"$2" 2>&1
}
