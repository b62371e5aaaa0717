# The Debian package of everything `cmake --install` installs (cmake/install.cmake, the targets'
# rules, and any other install() rule of the tree): scripts/package.sh runs cpack with this.
# Installed under /usr; Depends from dpkg-shlibdeps (the runtime libraries the binaries and
# libstarling link, never a -dev package) plus python3 and python3-numpy for the Python package.
set(STARLING_PACKAGE_MAINTAINER "Starling Developer <dev@starling.local>" CACHE STRING
    "The Debian package's Maintainer field (NAME <EMAIL>); set a public address to publish it")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME starling)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${STARLING_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The install runs with DESTDIR (not with the staging folder as its prefix), so that what is
# written at install time with the prefix (starling.pc) names /usr.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # starling_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "decentralized gossip daemon for distributed optimization
Starling trains one model on many machines without a parameter server: each
node (starlingd) optimizes on its own data and exchanges its model with its
neighbours over ZeroMQ, authenticated and encrypted with CURVE.
.
This package holds starlingd, the simulator starling-sim, the monitor and
probe starling-probe, the launchers starling-launch (local runs),
starling-launch-mpi, starling-launch-ssh and the report starling-report,
libstarling (a node inside your own training program, over a C ABI, with
its header and pkg-config file) and the Python package 'starling' over it
for NumPy and PyTorch loops.")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-matplotlib")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin, python3-torch, slurm-client")
# DEBIAN/shlibs: programs built against libstarling.so.ABI depend on this version or later.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# Maintainer scripts: byte-compile the Python package on install and remove the byte code on
# removal (cmake/deb/postinst, prerm); refresh the linker cache through dpkg's ldconfig trigger
# (cmake/deb/triggers) rather than by calling ldconfig (a postrm of our own, with nothing to do,
# keeps cpack from writing one that calls it).
configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/postinst.in ${PROJECT_BINARY_DIR}/deb/postinst @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/prerm.in ${PROJECT_BINARY_DIR}/deb/prerm @ONLY)
foreach(file postrm triggers)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/${file} ${PROJECT_BINARY_DIR}/deb/${file} COPYONLY)
endforeach()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/deb/postinst
    ${PROJECT_BINARY_DIR}/deb/prerm ${PROJECT_BINARY_DIR}/deb/postrm ${PROJECT_BINARY_DIR}/deb/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# /usr/share/doc/starling/ (copyright, changelog.gz) and lintian's overrides, added to the staged
# tree before it is packed (cmake/deb/docs.cmake); Debian-only, so not part of a plain
# `cmake --install`.
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/deb/docs.cmake)
set(CPACK_STARLING_DEB_DIR ${CMAKE_CURRENT_LIST_DIR}/deb)  # seen by docs.cmake
set(CPACK_STARLING_VERSION ${PROJECT_VERSION})
include(CPack)
