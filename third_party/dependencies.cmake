# Finds the Debian packages listed in debian-packages.txt and exposes them as
# imported targets. Included once from the top-level CMakeLists.txt.
include_guard(GLOBAL)

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(RapidJSON CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(cxxopts CONFIG REQUIRED)
# cxxopts' regex mode compiles several std::regex at static-init time, which
# costs every run of the CLI most of a millisecond; its plain parser suffices.
set_property(TARGET cxxopts::cxxopts APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS CXXOPTS_NO_REGEX)
find_package(Boost 1.74 REQUIRED)
# yaml-cpp's emitter writes the OpenShell runtime's sandbox policy, in one .cc
# of libsandbox; a private dependency that no installed header names.
find_package(yaml-cpp CONFIG REQUIRED)
option(MOJOUP_STATIC_DEPS
  "Link Abseil and OpenSSL's libcrypto into our programs statically: the dynamic loader's symbol lookups for some 30 shared libraries cost each run of the CLI about 2 ms"
  ON)
if(MOJOUP_STATIC_DEPS)
  set(OPENSSL_USE_STATIC_LIBS TRUE)
endif()
find_package(OpenSSL 3 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)

# Debian ships Abseil's and yaml-cpp's static archives beside the shared
# ones; point the imported targets at them.
if(MOJOUP_STATIC_DEPS)
  get_directory_property(_mojoup_imported IMPORTED_TARGETS)
  foreach(_target IN LISTS _mojoup_imported)
    if(NOT _target MATCHES "^absl::" AND NOT _target STREQUAL "yaml-cpp")
      continue()
    endif()
    get_target_property(_type ${_target} TYPE)
    if(NOT _type STREQUAL "SHARED_LIBRARY")
      continue()
    endif()
    foreach(_config IN ITEMS NONE RELEASE RELWITHDEBINFO DEBUG)
      get_target_property(_location ${_target} IMPORTED_LOCATION_${_config})
      if(_location AND _location MATCHES "^(.*)\\.so[.0-9]*$")
        set(_archive "${CMAKE_MATCH_1}.a")
        if(EXISTS "${_archive}")
          set_target_properties(${_target} PROPERTIES IMPORTED_LOCATION_${_config} "${_archive}")
          set_property(TARGET ${_target} PROPERTY IMPORTED_SONAME_${_config})
        endif()
      endif()
    endforeach()
  endforeach()
endif()

# toml++ for the doctor's reading of the OpenShell gateway's gateway.toml, in
# one .cc of libprobe. Debian's config (libtomlplusplus-dev) points the target
# at its shared library with TOML_HEADER_ONLY=0; the headers alone suffice, so
# take only its include directory: no shared library for the CLI to load and
# no dependency of the installed package.
find_package(tomlplusplus 3 CONFIG REQUIRED)
if(NOT TARGET mojoup_tomlplusplus)
  get_target_property(_mojoup_toml_include tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
  add_library(mojoup_tomlplusplus INTERFACE)
  target_include_directories(mojoup_tomlplusplus SYSTEM INTERFACE ${_mojoup_toml_include})
  target_compile_definitions(mojoup_tomlplusplus INTERFACE TOML_HEADER_ONLY=1)
endif()

# Debian's RapidJSON config sets variables only; give it a target.
if(NOT TARGET mojoup_rapidjson)
  add_library(mojoup_rapidjson INTERFACE)
  target_include_directories(mojoup_rapidjson SYSTEM INTERFACE ${RAPIDJSON_INCLUDE_DIRS})
  target_compile_definitions(mojoup_rapidjson INTERFACE RAPIDJSON_HAS_STDSTRING=1)
endif()

if(MOJOUP_BUILD_TESTS)
  find_package(Catch2 2 CONFIG REQUIRED)
  include(Catch)
endif()
