# ParaView Catalyst (the legacy C++ API of Debian bookworm's ParaView 5.11).
#
# NENDO_WITH_CATALYST: AUTO (default) builds the adaptor when ParaView is found, ON requires it,
# OFF never builds it. Sets NENDO_CATALYST_FOUND.
#
# Debian's ParaView/VTK package configs name imported targets of their dependencies without
# finding them (Freetype, X11, GLEW, LibXml2, Boost, HDF5's C and HL libraries, NetCDF), so
# they are found here first; the HDF5 and NetCDF targets are defined when CMake's modules do not.
set(NENDO_WITH_CATALYST AUTO CACHE STRING "Build the ParaView Catalyst adaptor: AUTO (when ParaView is found), ON or OFF")
set_property(CACHE NENDO_WITH_CATALYST PROPERTY STRINGS AUTO ON OFF)
set(NENDO_CATALYST_FOUND FALSE)

if(NOT NENDO_WITH_CATALYST STREQUAL "OFF")
  set(_quiet QUIET)
  if(NENDO_WITH_CATALYST STREQUAL "ON")
    set(_quiet REQUIRED)
  endif()
  find_package(Freetype ${_quiet})
  find_package(X11 ${_quiet})
  find_package(GLEW ${_quiet})
  find_package(LibXml2 ${_quiet})
  find_package(Boost ${_quiet})
  find_package(HDF5 ${_quiet} COMPONENTS C HL)
  if(NOT TARGET hdf5::hdf5)
    add_library(hdf5::hdf5 INTERFACE IMPORTED)
    target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
    target_include_directories(hdf5::hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS})
  endif()
  if(NOT TARGET hdf5::hdf5_hl)
    add_library(hdf5::hdf5_hl INTERFACE IMPORTED)
    target_link_libraries(hdf5::hdf5_hl INTERFACE ${HDF5_C_HL_LIBRARIES} hdf5::hdf5)
  endif()
  if(NOT TARGET NetCDF::NetCDF)
    find_library(NENDO_NETCDF_LIBRARY netcdf)
    if(NENDO_NETCDF_LIBRARY)
      add_library(NetCDF::NetCDF UNKNOWN IMPORTED)
      set_target_properties(NetCDF::NetCDF PROPERTIES IMPORTED_LOCATION ${NENDO_NETCDF_LIBRARY})
    endif()
  endif()
  find_package(ParaView ${_quiet} COMPONENTS PythonCatalyst VTKExtensionsCore)
  if(ParaView_FOUND)
    set(NENDO_CATALYST_FOUND TRUE)
    message(STATUS "nendo: ParaView ${ParaView_VERSION} found; Catalyst in-situ visualisation is on")
  else()
    message(STATUS "nendo: ParaView not found (Debian: paraview-dev python3-paraview); building without Catalyst")
  endif()
endif()
