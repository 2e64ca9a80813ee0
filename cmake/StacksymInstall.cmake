# What `cmake --install build --prefix P` (and `make install`) puts under P, and the Debian
# package `make deb` builds from the same rules (CPack, P = /usr). LIBDIR is
# lib/x86_64-linux-gnu on Debian and its derivatives (cmake/StacksymInstallDirs.cmake):
#   bin/stacksym                          the command
#   libexec/stacksym/llvm-symbolizer      symlink to it: the llvm-symbolizer drop-in
#   LIBDIR/libstacksym.so.N               the C API (SONAME libstacksym.so.N)
#   LIBDIR/stacksym/libstacksym-http.so   HTTP (cpp-httplib) for serve and --server, dlopen'ed
#   include/stacksym/stacksym.h           its header
#   LIBDIR/pkgconfig/stacksym.pc          pkg-config file naming P
#   LIBDIR/cmake/stacksym/                find_package(stacksym) → stacksym::stacksym
#   share/man/man1/stacksym.1             man page
#   lib/systemd/system/stacksym-agent.service   the agent as a service (installed disabled)
#   /etc/default/stacksym-agent           its options (P/etc/default/... under another prefix)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS stacksym_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Found relative to the command (src/remote/http_transport_loader.cc).
install(TARGETS stacksym_http LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/stacksym)
install(TARGETS stacksym_capi EXPORT stacksymTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/stacksym/stacksym.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/stacksym)
install(FILES ${CMAKE_SOURCE_DIR}/docs/stacksym.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# Relative, so the tree can be moved and packaged (DESTDIR, CPack).
install(CODE "
  set(dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBEXECDIR}/stacksym\")
  file(MAKE_DIRECTORY \"\${dir}\")
  file(CREATE_LINK ../../${CMAKE_INSTALL_BINDIR}/stacksym \"\${dir}/llvm-symbolizer\" SYMBOLIC)
  message(STATUS \"Installing: \${dir}/llvm-symbolizer -> ../../${CMAKE_INSTALL_BINDIR}/stacksym\")
")

# stacksym.pc names the prefix it is installed under, as distributions' .pc files do, so it is
# written at install time, when CMAKE_INSTALL_PREFIX is the one `--prefix`, `make install` or
# cpack (/usr, through DESTDIR) gives, not the tree's configured one.
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(pc_${dir} "${CMAKE_INSTALL_${dir}}")
    set(pc_${dir}_installed "${CMAKE_INSTALL_${dir}}")
  else()
    set(pc_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
    set(pc_${dir}_installed "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
install(CODE "
  get_filename_component(pc_prefix \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
  set(pc_libdir [[${pc_LIBDIR}]])
  set(pc_includedir [[${pc_INCLUDEDIR}]])
  set(PROJECT_VERSION ${PROJECT_VERSION})
  set(pc \"\$ENV{DESTDIR}${pc_LIBDIR_installed}/pkgconfig/stacksym.pc\")
  message(STATUS \"Installing: \${pc}\")
  configure_file(\"${CMAKE_SOURCE_DIR}/cmake/stacksym.pc.in\" \"\${pc}\" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${pc}\")
")

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/stacksym)
install(EXPORT stacksymTargets NAMESPACE stacksym:: DESTINATION ${config_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/stacksymConfig.cmake.in
  ${CMAKE_BINARY_DIR}/stacksymConfig.cmake INSTALL_DESTINATION ${config_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/stacksymConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/stacksymConfig.cmake
  ${CMAKE_BINARY_DIR}/stacksymConfigVersion.cmake DESTINATION ${config_dir})

# The agent's service: no maintainer script enables or starts it, so it stays disabled until the
# administrator says where profiles go (/etc/default/stacksym-agent) and enables it. The options
# file is a conffile: an upgrade keeps the administrator's.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/stacksym-agent.service
  DESTINATION lib/systemd/system)
install(CODE "
  if(\"\${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr\")
    set(dir \"\$ENV{DESTDIR}/etc/default\")
  else()
    set(dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/etc/default\")
  endif()
  file(MAKE_DIRECTORY \"\${dir}\")
  file(COPY_FILE \"${CMAKE_SOURCE_DIR}/packaging/stacksym-agent.default\" \"\${dir}/stacksym-agent\")
  message(STATUS \"Installing: \${dir}/stacksym-agent\")
")
file(WRITE ${CMAKE_BINARY_DIR}/debian-control/conffiles "/etc/default/stacksym-agent\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian-control/conffiles)

# `make deb` (cpack -G DEB in the build directory): stacksym_VERSION_ARCH.deb.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME stacksym)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "stacksym developers <stacksym@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Stack capture, normalization and symbolization (CLI, C library, llvm-symbolizer drop-in)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Installed with CMAKE_INSTALL_PREFIX=/usr into a staging DESTDIR (not with the staging
# directory as the prefix), so that stacksym.pc says prefix=/usr.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX ${CPACK_PACKAGING_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_STRIP_FILES ON)  # as Debian ships binaries: debug info belongs in a -dbgsym package
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # dpkg-shlibdeps (dpkg-dev) fills in Depends
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# dlopen'ed when DEBUGINFOD_URLS is set, so dpkg-shlibdeps cannot see it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS libdebuginfod1)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/package)
include(CPack)
