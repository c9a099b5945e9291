# cmake -DHEADER_DIRS="dir;dir..." -P check_third_party.cmake
#
# Fails when an installed public header includes a Boost, OpenSSL or RapidJSON
# header or names one of their types: the public API speaks standard types and
# Abseil's Status only, so that a program embedding the library needs none of
# them, and the library may change how it uses them.
set(forbidden_includes "#[ \t]*include[ \t]*[<\"](boost|openssl|rapidjson)/")
set(forbidden_names "boost::|rapidjson::|SSL_CTX|EVP_")
set(failures 0)
foreach(dir IN LISTS HEADER_DIRS)
  file(GLOB_RECURSE headers "${dir}/*.h")
  foreach(header IN LISTS headers)
    file(STRINGS "${header}" lines)
    set(number 0)
    foreach(line IN LISTS lines)
      math(EXPR number "${number} + 1")
      if(line MATCHES "${forbidden_includes}")
        message("${header}:${number}: includes a third-party header (${CMAKE_MATCH_1}/): ${line}")
        math(EXPR failures "${failures} + 1")
      elseif(line MATCHES "${forbidden_names}")
        message("${header}:${number}: names a third-party type (${CMAKE_MATCH_0}): ${line}")
        math(EXPR failures "${failures} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} line(s) in installed headers name Boost, OpenSSL or RapidJSON")
endif()
