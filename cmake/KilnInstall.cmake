# Install rules and Debian packages (CPack).
#
#   cmake --install build --prefix DIR          # everything
#   cmake --install build --component runtime   # one component
#   make install PREFIX=DIR / make deb
#
# Components, and the Debian package each becomes:
#   runtime      kiln-runtime       libkiln-runtime.so, kiln-run, kiln-bench
#                                   (no LLVM or MLIR: test/install checks)
#   runtime-dev  kiln-runtime-dev   kiln/runtime.h, kiln/runtime.hpp,
#                                   libkiln-runtime.a, the CMake package
#                                   (find_package(KilnRuntime)) and
#                                   kiln-runtime.pc
#   serve        kiln-serve         kiln-serve, kiln-loadgen
#   compiler     kiln-compiler      kiln-compile, kiln-opt, kiln-inspect
#   python       python3-kiln       import kiln (python/CMakeLists.txt)
include(CMakePackageConfigHelpers)

set(KILN_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/KilnRuntime)

install(TARGETS kiln-runtime-shared EXPORT KilnRuntimeTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
    NAMELINK_COMPONENT runtime-dev)
install(TARGETS kiln-runtime EXPORT KilnRuntimeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime-dev)
install(FILES runtime/include/kiln/runtime.h runtime/include/kiln/runtime.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln COMPONENT runtime-dev)
install(EXPORT KilnRuntimeTargets NAMESPACE KilnRuntime::
  DESTINATION ${KILN_CMAKE_PACKAGE_DIR} COMPONENT runtime-dev)
configure_package_config_file(cmake/KilnRuntimeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/KilnRuntimeConfig.cmake
  INSTALL_DESTINATION ${KILN_CMAKE_PACKAGE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/KilnRuntimeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/KilnRuntimeConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/KilnRuntimeConfigVersion.cmake
  DESTINATION ${KILN_CMAKE_PACKAGE_DIR} COMPONENT runtime-dev)
# pkg-config: kiln-runtime (shared; --static adds what the archive needs).
# The prefix is computed from the file's own place, so the tree relocates.
file(RELATIVE_PATH KILN_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(cmake/kiln-runtime.pc.in ${CMAKE_BINARY_DIR}/cmake/kiln-runtime.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/kiln-runtime.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT runtime-dev)

install(TARGETS kiln-run kiln-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT runtime)
install(TARGETS kiln-serve kiln-loadgen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT serve)
# The compiler tools find Debian's libMLIR/libLLVM (which are not on the
# loader's path) through their run path, installed or not.
set_target_properties(kiln-compile kiln-opt kiln-inspect PROPERTIES
  INSTALL_RPATH "${LLVM_LIBRARY_DIR}")
install(TARGETS kiln-compile kiln-opt kiln-inspect RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT compiler)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

# Debian packages, one per component (make deb -> build/packages/*.deb).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VENDOR "Kiln")
set(CPACK_PACKAGE_CONTACT "Kiln developers <kiln@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING IGNORE)
set(CPACK_COMPONENTS_ALL runtime runtime-dev serve compiler python)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Dependencies from the shared libraries each package's binaries link
# (dpkg-shlibdeps), plus the package relations below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME kiln-runtime)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# shlibs and the ldconfig trigger for libkiln-runtime.so.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_RUNTIME-DEV_PACKAGE_NAME kiln-runtime-dev)
set(CPACK_DEBIAN_SERVE_PACKAGE_NAME kiln-serve)
set(CPACK_DEBIAN_SERVE_PACKAGE_SECTION net)
set(CPACK_DEBIAN_COMPILER_PACKAGE_NAME kiln-compiler)
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-kiln)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3, python3-numpy")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "Kiln runtime: loads .kiln artifacts and runs them on cpu, HIP or emulated gfx devices")
set(CPACK_COMPONENT_RUNTIME-DEV_DESCRIPTION
  "Kiln runtime: C and C++ headers, static library, CMake package and pkg-config file")
set(CPACK_COMPONENT_RUNTIME-DEV_DEPENDS runtime)
set(CPACK_COMPONENT_SERVE_DESCRIPTION "Kiln server: KServe v2 REST and gRPC, dynamic batching")
set(CPACK_COMPONENT_COMPILER_DESCRIPTION
  "Kiln compiler: ONNX models to .kiln artifacts for AMD gfx targets and x86-64")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION
  "Kiln Python bindings (import kiln); kiln.compile needs kiln-compiler")
include(CPack)
