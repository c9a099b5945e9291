# CPack runs this on the staged package before packing it (CPack's
# CPACK_PRE_BUILD_SCRIPTS): strips its programs as Debian's dh_strip does,
# debug symbols and the .comment and .note sections too, which a plain
# `strip` (CPACK_STRIP_FILES) leaves.
file(GLOB_RECURSE _mojoup_staged LIST_DIRECTORIES FALSE
     "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/usr/bin/*" "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/usr/libexec/*")
foreach(_program IN LISTS _mojoup_staged)
  execute_process(COMMAND strip --remove-section=.comment --remove-section=.note ${_program}
                  RESULT_VARIABLE _result)
  if(NOT _result EQUAL 0)
    message(FATAL_ERROR "strip failed on ${_program}")
  endif()
endforeach()
