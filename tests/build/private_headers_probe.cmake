# cmake -DBUILD_DIR=<tree> -P private_headers_probe.cmake: builds the three probe libraries of
# tests/build and checks that only the one including a public header compiles.
function(build_probe probe result_var output_var)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target mm_probe_${probe}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} ${result} PARENT_SCOPE)
  set(${output_var} "${out}${err}" PARENT_SCOPE)
endfunction()

build_probe(public_header result output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "a public header did not build from another module:\n${output}")
endif()
foreach(probe private_header private_bare_name)
  build_probe(${probe} result output)
  if(result EQUAL 0)
    message(FATAL_ERROR "mm_probe_${probe} built: a private header was reachable from another module")
  endif()
  if(NOT output MATCHES "merge\\.h: No such file or directory")
    message(FATAL_ERROR "mm_probe_${probe} failed, but not on the private header:\n${output}")
  endif()
  message(STATUS "mm_probe_${probe}: refused as expected")
endforeach()
