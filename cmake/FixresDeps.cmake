# Dependency discovery: LibTorch (Debian's CPU build or a CUDA build from a PyTorch install on
# CMAKE_PREFIX_PATH), libjpeg(-turbo), libpng, zlib, CLI11, nlohmann-json, Gloo headers when present,
# libcurl (linked by the common layer only: the weight downloader).
find_package(Threads REQUIRED)
find_package(Torch REQUIRED)
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(CURL REQUIRED)

add_library(fixres_deps INTERFACE)
add_library(fixres::deps ALIAS fixres_deps)
target_link_libraries(fixres_deps INTERFACE
  ${TORCH_LIBRARIES} JPEG::JPEG PNG::PNG ZLIB::ZLIB CLI11::CLI11 nlohmann_json::nlohmann_json Threads::Threads)
# TORCH_CXX_FLAGS carries the C++ ABI define of the LibTorch build.
separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(fixres_deps INTERFACE ${_torch_flags})

if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(FIXRES_WITH_CUDA ON)
  target_compile_definitions(fixres_deps INTERFACE FIXRES_WITH_CUDA=1)
  message(STATUS "fixres: CUDA LibTorch found, GPU paths enabled")
else()
  set(FIXRES_WITH_CUDA OFF)
  message(STATUS "fixres: CPU LibTorch")
endif()
message(STATUS "fixres: LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX}")
