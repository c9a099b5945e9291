# cmake -DUMBRELLA=<mojoup/mojoup.h> -DHEADER_DIRS="dir;dir..." -P check_umbrella.cmake
#
# Fails when mojoup/mojoup.h, which promises the whole public API, misses a
# public header: a header added to a layer must be added there too.
file(READ "${UMBRELLA}" umbrella)
set(missing)
foreach(dir IN LISTS HEADER_DIRS)
  file(GLOB_RECURSE headers RELATIVE "${dir}" "${dir}/*.h")
  foreach(header IN LISTS headers)
    if(header STREQUAL "mojoup/mojoup.h")
      continue()
    endif()
    string(FIND "${umbrella}" "#include \"${header}\"" at)
    if(at EQUAL -1)
      list(APPEND missing ${header})
    endif()
  endforeach()
endforeach()
if(missing)
  list(JOIN missing ", " missing)
  message(FATAL_ERROR "${UMBRELLA} does not include: ${missing}")
endif()
