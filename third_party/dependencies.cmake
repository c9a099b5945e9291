# Finds the Debian packages listed in debian-packages.txt and exposes them as
# imported targets. Included once from the top-level CMakeLists.txt.
include_guard(GLOBAL)

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(RapidJSON CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(cxxopts CONFIG REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(OpenSSL 3 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)

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
