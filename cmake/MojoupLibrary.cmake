# mojoup_add_library(<name> SOURCES ... [ALONE <source>...] [LAYERS <lower layer>...]
#                    [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
#
# Each library is built three ways from one list of sources:
#   mojoup_<name>_interface  headers and public dependencies (exported)
#   mojoup_<name>_objects    the compiled objects, which the umbrella archive bundles
#   mojoup::<name>           a static library of its own (mojoup_<name>_static), for
#                            tests and tools that want just this layer
# A layer that lists mojoup_internal among its PRIVATE_DEPS compiles against the
# shared helpers; its own static library then links their archive
# (mojoup_internal_static), and the umbrella bundles their objects once.
#
# With MOJOUP_UNITY_BUILD the sources compile in batches of eight; ALONE names
# those (among SOURCES) that compile on their own, beside the batches: the
# ones whose heavy headers (Beast, toml++) would make one batch the build's
# longest step.
#
# LAYERS names the lower layers this one calls ("probe policy"). The interface
# target gets their headers; the static target links their static targets, so
# that mojoup::<name> alone is a complete link line (the umbrella archive
# holds every layer's objects and needs no such links).
include_guard(GLOBAL)

function(mojoup_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion -Wnon-virtual-dtor)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 false positive on std::string concatenation (GCC PR105329)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(MOJOUP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

function(mojoup_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;ALONE;LAYERS;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(mojoup_${name}_interface INTERFACE)
  target_include_directories(mojoup_${name}_interface INTERFACE
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    # Generated headers (mojoup/version.h).
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(mojoup_${name}_interface INTERFACE ${ARG_PUBLIC_DEPS})
  # Every consumer of the API compiles as C++20: the headers need it.
  target_compile_features(mojoup_${name}_interface INTERFACE cxx_std_20)
  foreach(layer IN LISTS ARG_LAYERS)
    target_link_libraries(mojoup_${name}_interface INTERFACE mojoup_${layer}_interface)
  endforeach()
  # Debian's compiled libfmt: the objects call into it, so whatever links
  # them (this layer's archive, the umbrella) links it too.
  if("fmt::fmt" IN_LIST ARG_PRIVATE_DEPS)
    target_link_libraries(mojoup_${name}_interface INTERFACE $<LINK_ONLY:fmt::fmt>)
  endif()

  add_library(mojoup_${name}_objects OBJECT ${ARG_SOURCES})
  target_include_directories(mojoup_${name}_objects PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(mojoup_${name}_objects PUBLIC mojoup_${name}_interface
                                               PRIVATE ${ARG_PRIVATE_DEPS})
  mojoup_warnings(mojoup_${name}_objects)
  set_target_properties(mojoup_${name}_objects PROPERTIES UNITY_BUILD ${MOJOUP_UNITY_BUILD}
                                                          UNITY_BUILD_BATCH_SIZE 8)
  set_source_files_properties(${ARG_ALONE} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

  add_library(mojoup_${name}_static STATIC $<TARGET_OBJECTS:mojoup_${name}_objects>)
  target_link_libraries(mojoup_${name}_static PUBLIC mojoup_${name}_interface)
  if("mojoup_internal" IN_LIST ARG_PRIVATE_DEPS)
    target_link_libraries(mojoup_${name}_static PRIVATE mojoup_internal_static)
  endif()
  foreach(layer IN LISTS ARG_LAYERS)
    target_link_libraries(mojoup_${name}_static PUBLIC mojoup_${layer}_static)
  endforeach()
  add_library(mojoup::${name} ALIAS mojoup_${name}_static)
endfunction()
