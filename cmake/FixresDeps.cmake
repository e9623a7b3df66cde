# Dependency discovery: LibTorch (Debian's CPU build or a CUDA build from a PyTorch install on
# CMAKE_PREFIX_PATH), libjpeg(-turbo), libpng, zlib, CLI11, nlohmann-json, Gloo headers when present,
# libcurl (linked by the common layer only: the weight downloader).
option(FIXRES_REQUIRE_CUDA "Fail the configure step unless the LibTorch found has CUDA" OFF)
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
# libstdc++ first among the shared libraries a program needs: the PyTorch wheels' libtorch.so and
# libtorch_cpu.so carry (and export) their own copy of std::filesystem from the toolchain they
# were built with, and a program listing them first binds its std::filesystem calls to that copy
# (remove_all through it crashed at exit). Debian's LibTorch exports none; the order is harmless
# there.
target_link_options(fixres_deps INTERFACE "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
# TORCH_CXX_FLAGS carries the C++ ABI define of the LibTorch build.
separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(fixres_deps INTERFACE ${_torch_flags})

if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(FIXRES_WITH_CUDA ON)
  target_compile_definitions(fixres_deps INTERFACE FIXRES_WITH_CUDA=1)
  message(STATUS "fixres: CUDA LibTorch found, GPU paths enabled")
else()
  set(FIXRES_WITH_CUDA OFF)
  if(FIXRES_REQUIRE_CUDA)
    message(FATAL_ERROR "fixres: FIXRES_REQUIRE_CUDA is set but the LibTorch at ${TORCH_INSTALL_PREFIX} "
                        "has no CUDA (torch_cuda not found)")
  endif()
  message(STATUS "fixres: CPU LibTorch")
endif()
# Gloo (the CPU collectives) is inside every LibTorch, but its headers come with Debian's LibTorch
# only: the PyTorch wheels ship none, and a CUDA build then takes Debian's libgloo-dev headers
# when they are installed (docs/pytorch2.md), NCCL alone when not.
find_path(FIXRES_GLOO_INCLUDE gloo/algorithm.h)
if(FIXRES_GLOO_INCLUDE)
  message(STATUS "fixres: Gloo headers at ${FIXRES_GLOO_INCLUDE}")
else()
  message(STATUS "fixres: no Gloo headers: CPU collectives left out of this build")
endif()
message(STATUS "fixres: LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX}")
