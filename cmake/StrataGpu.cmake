# The device code of this build: runtime/gpu/kernels/all_kernels.cu compiled
# once into a CUDA fatbin (nvcc) and a HIP code-object bundle (hipcc), each
# embedded in strata_runtime as data (runtime/gpu/images.h). The host side
# never needs either compiler: it loads the driver at run time and the module
# from these bytes (docs/gpu.md, "Building the device code").
#
#   STRATA_CUDA / STRATA_HIP   AUTO (default): an image when the compiler is
#                              found; ON: configure fails without it; OFF: none.
#   STRATA_CUDA_ARCHS          cubins, "75;80;90;120" (sm_86/sm_89 run sm_80's)
#   STRATA_CUDA_PTX            PTX for the driver to JIT on newer GPUs, "90"; "" for none
#   STRATA_HIP_ARCHS           code objects, "gfx90a;gfx1030"
#   STRATA_NVCC_THREADS        nvcc -t: targets compiled in parallel (2)
#   STRATA_GPU_IMAGES_DIR      take strata_cuda.fatbin / strata_hip.co and their
#                              .manifest files from this folder instead of
#                              compiling (CI compiles once, in the release
#                              build, and the other builds embed the same files)
#   STRATA_NVCC / STRATA_HIPCC the compilers (found in CUDAToolkit_ROOT/bin,
#                              /usr/local/cuda/bin, then PATH; hipcc in PATH)
#
# A compiled image lands in <build>/gpu-images/ beside its manifest
# ("targets=..." and "compiler=..." lines): that folder is what
# STRATA_GPU_IMAGES_DIR takes.
#
# The device-check build (one H200: one cubin, no PTX, no HIP):
#   cmake ... -DSTRATA_CUDA=ON -DSTRATA_CUDA_ARCHS=90 -DSTRATA_CUDA_PTX= -DSTRATA_HIP=OFF
#
# Sets, for runtime/CMakeLists.txt: strata_gpu_embed_images(target).

set(STRATA_CUDA AUTO CACHE STRING "CUDA device image: AUTO (when nvcc is found), ON (required) or OFF")
set_property(CACHE STRATA_CUDA PROPERTY STRINGS AUTO ON OFF)
set(STRATA_HIP AUTO CACHE STRING "HIP device image: AUTO (when hipcc is found), ON (required) or OFF")
set_property(CACHE STRATA_HIP PROPERTY STRINGS AUTO ON OFF)
set(STRATA_CUDA_ARCHS "75;80;90;120" CACHE STRING "CUDA cubin targets (compute capabilities, e.g. 75;80;90;120)")
set(STRATA_CUDA_PTX "90" CACHE STRING "CUDA PTX targets the driver JIT-compiles for newer GPUs (e.g. 90); empty for none")
set(STRATA_HIP_ARCHS "gfx90a;gfx1030" CACHE STRING "HIP code-object targets (e.g. gfx90a;gfx1030)")
set(STRATA_NVCC_THREADS 2 CACHE STRING "nvcc -t: device targets compiled in parallel")
set(STRATA_GPU_IMAGES_DIR "" CACHE PATH "Embed the images of this folder (another build's gpu-images/) instead of compiling them")

set(STRATA_GPU_KERNELS_SOURCE ${PROJECT_SOURCE_DIR}/runtime/gpu/kernels/all_kernels.cu)
set(STRATA_GPU_IMAGES_OUT ${PROJECT_BINARY_DIR}/gpu-images)

if(STRATA_GPU_IMAGES_DIR AND NOT IS_DIRECTORY "${STRATA_GPU_IMAGES_DIR}")
  message(FATAL_ERROR "STRATA_GPU_IMAGES_DIR=${STRATA_GPU_IMAGES_DIR} is not a folder: "
                      "give the gpu-images folder of a build that compiled the images")
endif()

foreach(kind CUDA HIP)
  string(TOUPPER "${STRATA_${kind}}" mode)
  if(NOT mode MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "STRATA_${kind}=${STRATA_${kind}}: expected AUTO, ON or OFF")
  endif()
  set(strata_${kind}_mode ${mode})
endforeach()

# _strata_gpu_no_image(KIND reason): records that this build has no image of
# KIND, says so, and fails configure when STRATA_KIND=ON asked for one.
macro(_strata_gpu_no_image kind reason)
  set(STRATA_GPU_${kind}_IMAGE "")
  set(STRATA_GPU_${kind}_TARGETS "")
  set(STRATA_GPU_${kind}_COMPILER "")
  string(TOLOWER ${kind} _strata_lower)
  set(STRATA_GPU_${kind}_NOTE
      "Strata GPU: no ${kind} image: ${reason}; --backend ${_strata_lower} will say this build has none")
  if(strata_${kind}_mode STREQUAL "ON")
    message(FATAL_ERROR "STRATA_${kind}=ON, but ${reason}")
  endif()
endmacro()

# _strata_gpu_shown_targets(out "sm_90 compute_90"): "sm_90 + PTX compute_90".
function(_strata_gpu_shown_targets out targets)
  string(REGEX REPLACE " compute_" " + PTX compute_" targets " ${targets}")
  string(STRIP "${targets}" targets)
  set(${out} "${targets}" PARENT_SCOPE)
endfunction()

# _strata_gpu_from_dir(KIND file): the image and manifest in STRATA_GPU_IMAGES_DIR.
macro(_strata_gpu_from_dir kind file)
  set(_strata_image ${STRATA_GPU_IMAGES_DIR}/${file})
  set(_strata_manifest ${STRATA_GPU_IMAGES_DIR}/${file}.manifest)
  if(NOT EXISTS ${_strata_image})
    _strata_gpu_no_image(${kind} "${STRATA_GPU_IMAGES_DIR} has no ${file}")
  elseif(NOT EXISTS ${_strata_manifest})
    message(FATAL_ERROR "STRATA_GPU_IMAGES_DIR=${STRATA_GPU_IMAGES_DIR} has ${file} but no ${file}.manifest: "
                        "copy the whole gpu-images folder of the build that compiled it")
  else()
    file(STRINGS ${_strata_manifest} _strata_targets REGEX "^targets=")
    file(STRINGS ${_strata_manifest} _strata_compiler REGEX "^compiler=")
    string(REGEX REPLACE "^targets=" "" _strata_targets "${_strata_targets}")
    string(REGEX REPLACE "^compiler=" "" _strata_compiler "${_strata_compiler}")
    if(_strata_targets STREQUAL "" OR _strata_compiler STREQUAL "")
      message(FATAL_ERROR "${_strata_manifest}: expected a targets= and a compiler= line")
    endif()
    set(STRATA_GPU_${kind}_IMAGE ${_strata_image})
    set(STRATA_GPU_${kind}_TARGETS "${_strata_targets}")
    set(STRATA_GPU_${kind}_COMPILER "${_strata_compiler}")
    _strata_gpu_shown_targets(_strata_shown "${_strata_targets}")
    set(STRATA_GPU_${kind}_NOTE
        "Strata GPU: ${kind} image for ${_strata_shown} (${_strata_compiler}, from ${_strata_image})")
  endif()
endmacro()

# _strata_gpu_write_if_changed(path content): writes `content` to `path`
# unless it holds exactly that already (so nothing that depends on it rebuilds).
function(_strata_gpu_write_if_changed path content)
  file(WRITE ${path}.tmp "${content}")
  file(COPY_FILE ${path}.tmp ${path} ONLY_IF_DIFFERENT)
  file(REMOVE ${path}.tmp)
endfunction()

# _strata_gpu_write_manifest(KIND file): the manifest beside a compiled image
# (rewritten only when it changes), or neither file when there is none, so a
# gpu-images folder never holds a stale image.
function(_strata_gpu_write_manifest kind file)
  if(STRATA_GPU_${kind}_IMAGE)
    _strata_gpu_write_if_changed(${STRATA_GPU_IMAGES_OUT}/${file}.manifest
         "targets=${STRATA_GPU_${kind}_TARGETS}\ncompiler=${STRATA_GPU_${kind}_COMPILER}\n")
  else()
    file(REMOVE ${STRATA_GPU_IMAGES_OUT}/${file} ${STRATA_GPU_IMAGES_OUT}/${file}.manifest)
  endif()
endfunction()

# --- CUDA -------------------------------------------------------------------
if(strata_CUDA_mode STREQUAL "OFF")
  _strata_gpu_no_image(CUDA "STRATA_CUDA=OFF")
elseif(STRATA_GPU_IMAGES_DIR)
  _strata_gpu_from_dir(CUDA strata_cuda.fatbin)
else()
  set(_strata_hints)
  foreach(root "${CUDAToolkit_ROOT}" "$ENV{CUDAToolkit_ROOT}")
    if(root)
      list(APPEND _strata_hints ${root}/bin)
    endif()
  endforeach()
  if(STRATA_NVCC AND NOT EXISTS "${STRATA_NVCC}")
    unset(STRATA_NVCC CACHE)  # found once, gone since: look again
  endif()
  find_program(STRATA_NVCC nvcc HINTS ${_strata_hints} /usr/local/cuda/bin)
  if(NOT STRATA_NVCC)
    _strata_gpu_no_image(CUDA "nvcc not found (set CUDAToolkit_ROOT)")
  else()
    execute_process(COMMAND ${STRATA_NVCC} --version OUTPUT_VARIABLE _strata_out ERROR_QUIET)
    string(REGEX MATCH "release ([0-9]+\\.[0-9]+)" _strata_match "${_strata_out}")
    set(_strata_version ${CMAKE_MATCH_1})
    execute_process(COMMAND ${STRATA_NVCC} --list-gpu-code OUTPUT_VARIABLE _strata_codes ERROR_QUIET)
    string(REGEX MATCHALL "sm_[0-9]+[a-z]?" _strata_codes "${_strata_codes}")
    if(NOT _strata_version OR NOT _strata_codes)
      message(FATAL_ERROR "${STRATA_NVCC} does not run as nvcc (--version said: ${_strata_out})")
    endif()
    set(STRATA_GPU_CUDA_GENCODE)
    set(_strata_targets)
    string(REPLACE ";" " " _strata_listed "${_strata_codes}")
    foreach(arch ${STRATA_CUDA_ARCHS})
      # 90a, 100f: a listed architecture with its arch- or family-specific features.
      string(REGEX REPLACE "[af]$" "" base "${arch}")
      if(NOT "sm_${base}" IN_LIST _strata_codes)
        message(FATAL_ERROR "STRATA_CUDA_ARCHS: nvcc ${_strata_version} cannot build sm_${arch}; it builds ${_strata_listed}")
      endif()
      list(APPEND STRATA_GPU_CUDA_GENCODE -gencode=arch=compute_${arch},code=sm_${arch})
      list(APPEND _strata_targets sm_${arch})
    endforeach()
    foreach(arch ${STRATA_CUDA_PTX})
      string(REGEX REPLACE "[af]$" "" base "${arch}")
      if(NOT "sm_${base}" IN_LIST _strata_codes)
        message(FATAL_ERROR "STRATA_CUDA_PTX: nvcc ${_strata_version} has no compute_${arch}; it builds ${_strata_listed}")
      endif()
      list(APPEND STRATA_GPU_CUDA_GENCODE -gencode=arch=compute_${arch},code=compute_${arch})
      list(APPEND _strata_targets compute_${arch})
    endforeach()
    if(NOT _strata_targets)
      message(FATAL_ERROR "STRATA_CUDA_ARCHS and STRATA_CUDA_PTX are both empty: set STRATA_CUDA=OFF for no CUDA image")
    endif()
    string(REPLACE ";" " " _strata_targets "${_strata_targets}")
    set(STRATA_GPU_CUDA_IMAGE ${STRATA_GPU_IMAGES_OUT}/strata_cuda.fatbin)
    set(STRATA_GPU_CUDA_TARGETS "${_strata_targets}")
    set(STRATA_GPU_CUDA_COMPILER "nvcc ${_strata_version}")
    set(STRATA_GPU_CUDA_BUILD ON)
    _strata_gpu_shown_targets(_strata_shown "${_strata_targets}")
    set(STRATA_GPU_CUDA_NOTE "Strata GPU: CUDA image for ${_strata_shown} (${STRATA_GPU_CUDA_COMPILER} at ${STRATA_NVCC})")
  endif()
endif()

# --- HIP --------------------------------------------------------------------
if(strata_HIP_mode STREQUAL "OFF")
  _strata_gpu_no_image(HIP "STRATA_HIP=OFF")
elseif(STRATA_GPU_IMAGES_DIR)
  _strata_gpu_from_dir(HIP strata_hip.co)
else()
  if(STRATA_HIPCC AND NOT EXISTS "${STRATA_HIPCC}")
    unset(STRATA_HIPCC CACHE)
  endif()
  find_program(STRATA_HIPCC hipcc)
  if(NOT STRATA_HIPCC)
    _strata_gpu_no_image(HIP "hipcc not found (install Debian's hipcc, or put it in PATH)")
  elseif(NOT STRATA_HIP_ARCHS)
    message(FATAL_ERROR "STRATA_HIP_ARCHS is empty: set STRATA_HIP=OFF for no HIP image")
  else()
    # hipcc --version also runs rocm_agent_enumerator, which complains on
    # stderr on a machine without an AMD GPU: ignored.
    execute_process(COMMAND ${STRATA_HIPCC} --version OUTPUT_VARIABLE _strata_out ERROR_QUIET)
    string(REGEX MATCH "HIP version: ([0-9]+\\.[0-9]+\\.[0-9]+)" _strata_match "${_strata_out}")
    set(_strata_version ${CMAKE_MATCH_1})
    string(REGEX MATCH "clang version ([0-9]+\\.[0-9]+\\.[0-9]+)" _strata_match "${_strata_out}")
    set(_strata_clang ${CMAKE_MATCH_1})
    if(NOT _strata_version)
      message(FATAL_ERROR "${STRATA_HIPCC} does not run as hipcc (--version said: ${_strata_out})")
    endif()
    set(STRATA_GPU_HIP_OFFLOAD)
    foreach(arch ${STRATA_HIP_ARCHS})
      if(NOT arch MATCHES "^gfx[0-9a-f]+(:[a-z+-]+)*$")
        message(FATAL_ERROR "STRATA_HIP_ARCHS: ${arch} is not a gfx target (e.g. gfx90a)")
      endif()
      list(APPEND STRATA_GPU_HIP_OFFLOAD --offload-arch=${arch})
    endforeach()
    string(REPLACE ";" " " _strata_targets "${STRATA_HIP_ARCHS}")
    set(STRATA_GPU_HIP_IMAGE ${STRATA_GPU_IMAGES_OUT}/strata_hip.co)
    set(STRATA_GPU_HIP_TARGETS "${_strata_targets}")
    set(STRATA_GPU_HIP_COMPILER "hipcc ${_strata_version}, clang ${_strata_clang}")
    set(STRATA_GPU_HIP_BUILD ON)
    set(STRATA_GPU_HIP_NOTE "Strata GPU: HIP image for ${_strata_targets} (${STRATA_GPU_HIP_COMPILER} at ${STRATA_HIPCC})")
  endif()
endif()

message(STATUS "${STRATA_GPU_CUDA_NOTE}")
message(STATUS "${STRATA_GPU_HIP_NOTE}")
if(NOT STRATA_GPU_IMAGES_DIR)
  file(MAKE_DIRECTORY ${STRATA_GPU_IMAGES_OUT})
  _strata_gpu_write_manifest(CUDA strata_cuda.fatbin)
  _strata_gpu_write_manifest(HIP strata_hip.co)
endif()

# _strata_gpu_asm_path(out path): `path` as an assembler string's contents.
function(_strata_gpu_asm_path out path)
  string(REPLACE "\\" "\\\\" path "${path}")
  string(REPLACE "\"" "\\\"" path "${path}")
  set(${out} "${path}" PARENT_SCOPE)
endfunction()

# strata_gpu_embed_images(target): compiles the images this configuration has
# (custom commands in the caller's directory, so `target` owns them) and
# embeds them in `target`:
#   generated/strata/gpu_images_config.h   whether each image is there, its
#                                          targets, compiler and configure note
#   generated/strata_gpu_images_data.cc    the bytes, by the assembler's .incbin
# .incbin keeps multi-MB images out of the C++ front end; the data file
# depends on the image files (OBJECT_DEPENDS), so a new image relinks. ccache
# does not cache a source with .incbin (it cannot hash what it pulls in).
function(strata_gpu_embed_images target)
  set(common -std=c++20 -O3 -I${PROJECT_SOURCE_DIR})
  if(STRATA_GPU_CUDA_BUILD)
    set(out ${STRATA_GPU_CUDA_IMAGE})
    add_custom_command(OUTPUT ${out}
      COMMAND ${STRATA_NVCC} -fatbin ${common} --expt-relaxed-constexpr -t ${STRATA_NVCC_THREADS}
              ${STRATA_GPU_CUDA_GENCODE} -MD -MF ${out}.d -o ${out} ${STRATA_GPU_KERNELS_SOURCE}
      DEPENDS ${STRATA_GPU_KERNELS_SOURCE}
      DEPFILE ${out}.d
      COMMENT "CUDA image: ${STRATA_GPU_CUDA_TARGETS} (${STRATA_GPU_CUDA_COMPILER})"
      VERBATIM)
  endif()
  if(STRATA_GPU_HIP_BUILD)
    set(out ${STRATA_GPU_HIP_IMAGE})
    add_custom_command(OUTPUT ${out}
      COMMAND ${STRATA_HIPCC} --genco ${STRATA_GPU_HIP_OFFLOAD} ${common}
              -MD -MF ${out}.d -o ${out} ${STRATA_GPU_KERNELS_SOURCE}
      DEPENDS ${STRATA_GPU_KERNELS_SOURCE}
      DEPFILE ${out}.d
      COMMENT "HIP image: ${STRATA_GPU_HIP_TARGETS} (${STRATA_GPU_HIP_COMPILER})"
      VERBATIM)
  endif()

  set(config "// Generated by cmake/StrataGpu.cmake. Do not edit.\n#pragma once\n")
  string(CONCAT data "// Generated by cmake/StrataGpu.cmake. Do not edit.\n"
         "// The device images as read-only data (.incbin): runtime/gpu/images.cc\n"
         "// finds them by these symbol names (asm labels: no C name prefix).\n")
  set(images)
  foreach(kind CUDA HIP)
    string(TOLOWER ${kind} lower)
    set(have 0)
    if(STRATA_GPU_${kind}_IMAGE)
      set(have 1)
      list(APPEND images ${STRATA_GPU_${kind}_IMAGE})
      _strata_gpu_asm_path(path ${STRATA_GPU_${kind}_IMAGE})
      set(sym strata_gpu_${lower}_image)
      # ELF: a section of its own, pushed and popped. COFF has no section
      # stack: .rdata, then back to .text, the section the compiler assumes
      # (this file holds nothing else).
      string(APPEND data
        "#if defined(_WIN32)\n"
        "asm(R\"strata(\n  .section .rdata,\"dr\"\n")
      string(APPEND data
        "  .balign 64\n  .globl ${sym}_begin\n  .globl ${sym}_end\n${sym}_begin:\n"
        "  .incbin \"${path}\"\n${sym}_end:\n  .byte 0\n  .text\n)strata\");\n"
        "#else\n"
        "asm(R\"strata(\n  .pushsection .rodata.strata_gpu_images,\"a\",@progbits\n"
        "  .balign 64\n  .globl ${sym}_begin\n  .globl ${sym}_end\n  .hidden ${sym}_begin\n  .hidden ${sym}_end\n"
        "${sym}_begin:\n  .incbin \"${path}\"\n${sym}_end:\n  .byte 0\n  .popsection\n)strata\");\n"
        "#endif\n")
    endif()
    string(REPLACE "\\" "\\\\" note "${STRATA_GPU_${kind}_NOTE}")
    string(REPLACE "\"" "\\\"" note "${note}")
    string(APPEND config
      "#define STRATA_GPU_${kind}_IMAGE ${have}\n"
      "#define STRATA_GPU_${kind}_TARGETS \"${STRATA_GPU_${kind}_TARGETS}\"\n"
      "#define STRATA_GPU_${kind}_COMPILER \"${STRATA_GPU_${kind}_COMPILER}\"\n"
      "// What configure said about this image.\n"
      "#define STRATA_GPU_${kind}_NOTE \"${note}\"\n")
  endforeach()
  _strata_gpu_write_if_changed(${PROJECT_BINARY_DIR}/generated/strata/gpu_images_config.h "${config}")
  if(images)
    set(data_src ${PROJECT_BINARY_DIR}/generated/strata_gpu_images_data.cc)
    _strata_gpu_write_if_changed(${data_src} "${data}")
    # The images as sources too (not compiled: unknown extensions), so the
    # custom commands that make them belong to `target`.
    target_sources(${target} PRIVATE ${data_src} ${images})
    set_source_files_properties(${data_src} PROPERTIES OBJECT_DEPENDS "${images}")
  endif()
endfunction()
