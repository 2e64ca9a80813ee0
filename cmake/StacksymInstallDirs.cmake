# Install directories: GNUInstallDirs, with the libraries under lib/<multiarch triplet>
# (lib/x86_64-linux-gnu) wherever the compiler names one, as Debian lays out libraries and as
# its packaging tools configure every CMake project, whatever the prefix (GNUInstallDirs alone
# does it only for prefix /usr, and the .deb is installed at /usr from a tree configured for
# /usr/local). -DCMAKE_INSTALL_LIBDIR=lib keeps the flat layout.
if(CMAKE_LIBRARY_ARCHITECTURE AND NOT STACKSYM_LIBDIR_SETTLED)
  # A tree configured before this rule holds GNUInstallDirs' "lib" for /usr/local: moved once.
  if(NOT DEFINED CACHE{CMAKE_INSTALL_LIBDIR} OR
     (CMAKE_INSTALL_LIBDIR STREQUAL "lib" AND DEFINED CACHE{_GNUInstallDirs_LAST_CMAKE_INSTALL_PREFIX}))
    set(CMAKE_INSTALL_LIBDIR "lib/${CMAKE_LIBRARY_ARCHITECTURE}" CACHE PATH
        "Object code libraries (lib/${CMAKE_LIBRARY_ARCHITECTURE})" FORCE)
  endif()
  set(STACKSYM_LIBDIR_SETTLED ON CACHE INTERNAL "CMAKE_INSTALL_LIBDIR's multiarch default applied")
endif()
include(GNUInstallDirs)
