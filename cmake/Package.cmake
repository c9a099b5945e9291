# The Debian package mojoup-node_<version>_<arch>.deb, made with CPack's DEB
# generator: what a node runs (the CLI, the sandbox init, the systemd units,
# the man page, bash completion), installed under /usr; not the headers, the
# static libraries or the test doubles. docs/debian-package.md says what it
# holds and why; scripts/package.sh builds and checks it:
#
#   cmake --build build/default --target mojoup-node-deb-files
#   cd build/default && cpack    # build/default/package/mojoup-node_0.1.0_amd64.deb
#
# The package's files are install rules of their own in the component "deb",
# which a plain `cmake --install` leaves out: that still installs what it did
# (library, headers, test doubles, CLI and units under CMAKE_INSTALL_PREFIX).
# Their destinations are relative to /, so the units can go to /lib, where
# Debian 12 keeps system units.
include_guard(GLOBAL)

set(MOJOUP_DEB_DIR ${PROJECT_BINARY_DIR}/deb)
set(MOJOUP_DEB_SOURCE ${PROJECT_SOURCE_DIR}/packaging/debian)
set(MOJOUP_DEB_MAINTAINER "mojoup maintainers <maintainers@users.noreply.a-seed-31621606.example>"
    CACHE STRING "The Maintainer field of the Debian package")

# The units again, naming /usr/bin/mojoup-node whatever prefix this build was
# configured with (cli/CMakeLists.txt's copies name CMAKE_INSTALL_PREFIX's).
function(mojoup_deb_units)
  set(CMAKE_INSTALL_FULL_BINDIR /usr/bin)
  foreach(kind IN ITEMS system user)
    configure_file(${PROJECT_SOURCE_DIR}/packaging/systemd/${kind}/mojoup-node.service.in
                   ${MOJOUP_DEB_DIR}/systemd/${kind}/mojoup-node.service @ONLY)
  endforeach()
endfunction()
mojoup_deb_units()

# What is made from the built CLI's help (both scripts run it) and the
# gzipped documents; `mojoup-node-deb-files` builds them and the programs.
add_custom_command(
  OUTPUT ${MOJOUP_DEB_DIR}/mojoup-node.1.gz
  COMMAND ${PROJECT_SOURCE_DIR}/packaging/man/generate.sh $<TARGET_FILE:mojoup-node>
          ${PROJECT_SOURCE_DIR}/packaging/man/mojoup-node.h2m ${MOJOUP_DEB_DIR}/mojoup-node.1.gz
  DEPENDS mojoup-node ${PROJECT_SOURCE_DIR}/packaging/man/generate.sh
          ${PROJECT_SOURCE_DIR}/packaging/man/mojoup-node.h2m
  COMMENT "Generating the man page mojoup-node(1) from mojoup-node --help"
  VERBATIM)
add_custom_command(
  OUTPUT ${MOJOUP_DEB_DIR}/bash-completion/mojoup-node
  COMMAND ${PROJECT_SOURCE_DIR}/packaging/bash-completion/generate.sh $<TARGET_FILE:mojoup-node>
          ${MOJOUP_DEB_DIR}/bash-completion/mojoup-node
  DEPENDS mojoup-node ${PROJECT_SOURCE_DIR}/packaging/bash-completion/generate.sh
  COMMENT "Generating mojoup-node's bash completion from mojoup-node --help"
  VERBATIM)
# The README is the operator's overview and docs/ the reference it links to:
# both go to /usr/share/doc/mojoup-node, the reference as docs/*.md.gz.
set(_mojoup_deb_doc_pairs "packaging/debian/changelog=changelog.gz" "README.md=README.md.gz")
file(GLOB _mojoup_deb_reference CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
     ${PROJECT_SOURCE_DIR}/docs/*.md)
foreach(doc IN LISTS _mojoup_deb_reference)
  list(APPEND _mojoup_deb_doc_pairs "${doc}=${doc}.gz")
endforeach()
set(_mojoup_deb_gzipped)
set(_mojoup_deb_gzipped_reference)
foreach(pair IN LISTS _mojoup_deb_doc_pairs)
  string(REPLACE "=" ";" pair ${pair})
  list(GET pair 0 from)
  list(GET pair 1 to)
  add_custom_command(
    OUTPUT ${MOJOUP_DEB_DIR}/doc/${to}
    COMMAND sh -c "gzip -9n < \"$1\" > \"$2\"" sh ${PROJECT_SOURCE_DIR}/${from}
            ${MOJOUP_DEB_DIR}/doc/${to}
    DEPENDS ${PROJECT_SOURCE_DIR}/${from}
    VERBATIM)
  if(to MATCHES "^docs/")
    list(APPEND _mojoup_deb_gzipped_reference ${MOJOUP_DEB_DIR}/doc/${to})
  else()
    list(APPEND _mojoup_deb_gzipped ${MOJOUP_DEB_DIR}/doc/${to})
  endif()
endforeach()
file(MAKE_DIRECTORY ${MOJOUP_DEB_DIR}/bash-completion ${MOJOUP_DEB_DIR}/doc/docs)
add_custom_target(mojoup-node-deb-files
  DEPENDS ${MOJOUP_DEB_DIR}/mojoup-node.1.gz ${MOJOUP_DEB_DIR}/bash-completion/mojoup-node
          ${_mojoup_deb_gzipped} ${_mojoup_deb_gzipped_reference})
add_dependencies(mojoup-node-deb-files mojoup-node mojoup-sandbox-init)

# The sandbox init where the CLI looks for it: <bindir>/../libexec/mojoup/.
install(TARGETS mojoup-node RUNTIME DESTINATION usr/bin COMPONENT deb EXCLUDE_FROM_ALL)
install(TARGETS mojoup-sandbox-init RUNTIME DESTINATION usr/libexec/mojoup COMPONENT deb
        EXCLUDE_FROM_ALL)
install(FILES ${MOJOUP_DEB_DIR}/systemd/system/mojoup-node.service DESTINATION lib/systemd/system
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${MOJOUP_DEB_DIR}/systemd/user/mojoup-node.service DESTINATION usr/lib/systemd/user
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${MOJOUP_DEB_DIR}/mojoup-node.1.gz DESTINATION usr/share/man/man1 COMPONENT deb
        EXCLUDE_FROM_ALL)
install(FILES ${MOJOUP_DEB_DIR}/bash-completion/mojoup-node
        DESTINATION usr/share/bash-completion/completions COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${MOJOUP_DEB_SOURCE}/copyright ${_mojoup_deb_gzipped}
        DESTINATION usr/share/doc/mojoup-node COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${_mojoup_deb_gzipped_reference} DESTINATION usr/share/doc/mojoup-node/docs
        COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${MOJOUP_DEB_SOURCE}/lintian-overrides DESTINATION usr/share/lintian/overrides
        RENAME mojoup-node COMPONENT deb EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mojoup-node)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
# The component "deb" alone, from /.
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};${PROJECT_NAME};deb;/")
set(CPACK_PACKAGING_INSTALL_PREFIX /)
# Stripped as dh_strip does it (CPACK_STRIP_FILES would leave .comment).
set(CPACK_PRE_BUILD_SCRIPTS ${MOJOUP_DEB_SOURCE}/strip.cmake)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${MOJOUP_DEB_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The summary line is the project's DESCRIPTION (CPACK_PACKAGE_DESCRIPTION_SUMMARY).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "mojoup-node runs AI coding-agent sessions (Claude Code, Codex, Copilot CLI,
OpenCode, Kilo Code) in a sandbox per session on this node: a Docker
container, built natively or by OpenShell, that reaches only the hosts the
repository's policy allows and holds stand-ins instead of API keys.
.
This package holds the mojoup-node command (doctor, setup, config, run,
status, stop, image build, serve), the sandbox's init and the systemd units
of the sandbox service, for the whole node and for one user.")
# The shared libraries the programs link (libc6, libsystemd0, libidn2-0,
# zlib1g), from dpkg-shlibdeps; Abseil, libcrypto, yaml-cpp, libseccomp and
# libstdc++ are linked in (MOJOUP_STATIC_DEPS). The rest is what the CLI runs or talks
# to: a session's repository is a git work tree, sandboxes are Docker
# containers.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "git, docker.io | docker-ce")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ca-certificates")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "mmdebstrap, openssh-client")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${MOJOUP_DEB_SOURCE}/postinst ${MOJOUP_DEB_SOURCE}/prerm ${MOJOUP_DEB_SOURCE}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)

# The completion must complete every command and option the CLI's help names.
if(MOJOUP_BUILD_TESTS)
  add_test(NAME bash_completion
           COMMAND ${PROJECT_SOURCE_DIR}/packaging/bash-completion/completion_test.sh
                   $<TARGET_FILE:mojoup-node>
                   ${PROJECT_SOURCE_DIR}/packaging/bash-completion/generate.sh)
  set_tests_properties(bash_completion PROPERTIES LABELS "e2e;cli")
endif()
