# OpenVINO, the second inference runtime (--runtime openvino; docs/runtimes.md): the C++ SDK of
# the openvino wheel in the project's environment (.venv-torch2, requirements-torch2.txt: headers,
# CMake config and libraries), or the OpenVINOConfig.cmake folder given as FIXRES_OPENVINO_DIR.
# Linked by the engine layer only. Without it the build runs LibTorch alone and `fixres version`
# says so; a build made before the environment existed finds it once reconfigured.
set(FIXRES_OPENVINO_DIR "" CACHE PATH "Folder of OpenVINOConfig.cmake (default: the openvino wheel in .venv-torch2)")
option(FIXRES_WITH_OPENVINO "Build the OpenVINO runtime where OpenVINO is found" ON)
set(FIXRES_HAVE_OPENVINO OFF)
# Sanitizer builds leave it out: the wheel's TBB loads its NUMA helper (libtbbbind) with
# RTLD_DEEPBIND, which the sanitizer runtimes refuse, so every OpenVINO run would fail there.
if(FIXRES_WITH_OPENVINO AND FIXRES_SANITIZE)
  message(STATUS "fixres: sanitizer build: --runtime openvino left out (TBB's RTLD_DEEPBIND)")
elseif(FIXRES_WITH_OPENVINO)
  set(_fixres_ov_hints "${FIXRES_OPENVINO_DIR}")
  if(NOT _fixres_ov_hints)
    file(GLOB _fixres_ov_hints
         "${PROJECT_SOURCE_DIR}/.venv-torch2/lib/python3*/site-packages/openvino/cmake")
  endif()
  if(_fixres_ov_hints)
    find_package(OpenVINO CONFIG QUIET COMPONENTS Runtime HINTS ${_fixres_ov_hints} NO_DEFAULT_PATH)
  endif()
  if(OpenVINO_FOUND)
    set(FIXRES_HAVE_OPENVINO ON)
    get_target_property(_fixres_ov_lib openvino::runtime IMPORTED_LOCATION_RELEASE)
    message(STATUS "fixres: OpenVINO ${OpenVINO_VERSION} at ${_fixres_ov_lib}")
  else()
    message(STATUS "fixres: no OpenVINO (make torch2-env installs it): --runtime openvino left out")
  endif()
endif()
