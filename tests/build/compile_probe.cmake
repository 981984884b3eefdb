# cmake -DBUILD_DIR=<tree> -DTARGET=<probe target> -DEXPECT=<ok|regex> -P compile_probe.cmake:
# builds one probe library of tests/build; EXPECT=ok wants it to compile, anything else is a
# regular expression the compiler's refusal must match.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "ok")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${TARGET} should compile:\n${out}${err}")
  endif()
elseif(result EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but must be refused (${EXPECT})")
elseif(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "${TARGET} was refused, but not for `${EXPECT}`:\n${out}${err}")
else()
  message(STATUS "${TARGET}: refused as expected")
endif()
