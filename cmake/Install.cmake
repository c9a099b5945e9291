include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(MOJOUP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mojoup_sandbox)

install(TARGETS mojoup_sandbox mojoup_probe_interface mojoup_policy_interface
                mojoup_credproxy_interface mojoup_sandbox_interface mojoup_testing_package
                mojoup_credproxy_package mojoup_sandbox_types mojoup_service_client_interface
                mojoup_service_interface mojoup_service_client_package
        EXPORT mojoup_sandboxTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY libprobe/include/ libpolicy/include/ libcredproxy/include/ libsandbox/include/
                  libservice/include/
                  libprobe/testing/include/ libsandbox/testing/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/mojoup/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mojoup)
install(TARGETS mojoup-node RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The test doubles that are programs; FindTestingProgram() looks here.
install(TARGETS fake-openshell fake-openshell-sandbox fake-dockerd RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/mojoup)
install(EXPORT mojoup_sandboxTargets NAMESPACE mojoup:: DESTINATION ${MOJOUP_CMAKE_DIR})

configure_package_config_file(cmake/mojoup_sandboxConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/mojoup_sandboxConfig.cmake INSTALL_DESTINATION ${MOJOUP_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/mojoup_sandboxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/mojoup_sandboxConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/mojoup_sandboxConfigVersion.cmake
        DESTINATION ${MOJOUP_CMAKE_DIR})

# The .pc file finds the prefix from its own place, so an installed tree can move.
file(RELATIVE_PATH MOJOUP_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
foreach(pc IN ITEMS mojoup_sandbox mojoup_credproxy mojoup_service_client mojoup_sandbox_testing)
  configure_file(cmake/${pc}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
