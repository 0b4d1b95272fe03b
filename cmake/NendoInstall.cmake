# `cmake --install`: the nendo program, its libraries and headers, and a CMake package, so that
# another code can `find_package(nendo)` and run a scene or drive a method from C++
# (jobs/examples/embed/). The shipped scenes, Catalyst scripts and tools go to share/nendo.
include(CMakePackageConfigHelpers)

# nendo_whole_archive libraries are an interface and its archive: both go (CMakeLists.txt).
set(NENDO_LIBRARIES nendo_core nendo_mpi_time nendo_decomposition nendo_solvers nendo_io nendo_insitu
                    nendo_scene nendo_materials nendo_materials_archive nendo_colliders nendo_colliders_archive
                    nendo_bodies nendo_fem nendo_methods nendo_methods_archive nendo_app)
set(NENDO_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/nendo)

install(TARGETS nendo ${NENDO_LIBRARIES} EXPORT nendoTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT nendoTargets NAMESPACE nendo:: DESTINATION ${NENDO_CMAKE_DIR})

# Headers keep the folders they are included by: include/nendo/{core,decomposition,io,...}/.
foreach(dir src/app src/bodies src/colliders src/core src/materials src/methods src/scene decomposition io
            solvers)
  get_filename_component(name ${dir} NAME)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nendo/${name}
          FILES_MATCHING PATTERN "*.hpp")
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nendoConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/nendoConfig.cmake INSTALL_DESTINATION ${NENDO_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nendoConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nendoConfig.cmake ${PROJECT_BINARY_DIR}/nendoConfigVersion.cmake
        DESTINATION ${NENDO_CMAKE_DIR})

# USE_SOURCE_PERMISSIONS: the tools stay executable (their shebangs find python3 and pvbatch).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/jobs/scenes ${PROJECT_SOURCE_DIR}/jobs/catalyst
                  ${PROJECT_SOURCE_DIR}/jobs/tools ${PROJECT_SOURCE_DIR}/jobs/examples
        DESTINATION ${CMAKE_INSTALL_DATADIR}/nendo USE_SOURCE_PERMISSIONS)
