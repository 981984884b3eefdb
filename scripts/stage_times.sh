# Stage timing for scripts/test.sh (sourced, not run): every stage's wall time against its budget,
# printed at the end of the run, also when a stage fails, so the change that makes a stage slower
# is seen at once.
#   stage NAME BUDGET_SECONDS   ends the running stage (if any) and starts NAME
#   stage_end                   ends the running stage
#   stage_report STATUS TOTAL_BUDGET_SECONDS
#                               prints one line per stage and the total; the running stage (the
#                               one that failed, when STATUS is not 0) is marked as such
stage_names=()
stage_seconds=()
stage_budgets=()
stage_current=""
stage_current_budget=0
stage_current_start=0
stage_run_start=$SECONDS

stage_end() {
  [ -n "$stage_current" ] || return 0
  stage_names+=("$stage_current")
  stage_seconds+=($((SECONDS - stage_current_start)))
  stage_budgets+=("$stage_current_budget")
  stage_current=""
}

stage() {
  stage_end
  stage_current=$1
  stage_current_budget=$2
  stage_current_start=$SECONDS
  printf '\n=== %s ===\n' "$1"
}

stage_report() {
  local status=$1 total_budget=$2 failed="" i mark
  if [ -n "$stage_current" ]; then
    ((status == 0)) || failed=$stage_current
    stage_end
  fi
  printf '\n=== stage times (wall clock, seconds; budget) ===\n'
  for i in "${!stage_names[@]}"; do
    mark=""
    ((stage_seconds[i] <= stage_budgets[i])) || mark="  OVER BUDGET"
    [ "${stage_names[i]}" != "$failed" ] || mark="$mark  FAILED"
    printf '%5d  (%4d)  %s%s\n' "${stage_seconds[i]}" "${stage_budgets[i]}" "${stage_names[i]}" \
      "$mark"
  done
  mark=""
  (((SECONDS - stage_run_start) <= total_budget)) || mark="  OVER BUDGET"
  printf '%5d  (%4d)  total%s\n' $((SECONDS - stage_run_start)) "$total_budget" "$mark"
}
