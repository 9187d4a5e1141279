# Reads a named configuration's loom_fabric parameters out of the generated
# loom_pkg.sv (itself generated from docs/spec/configs.yaml), so no parameter
# is ever typed by hand, and turns them into Verilator -G flags.

# loom_rtl_config_params(<cfg> <prefix>) sets in the caller's scope:
#   <prefix>_GFLAGS      list of -G<Param>=<value>
#   <prefix>_CORES, _ROWS, _COLS, _MEM_PORTS, _MEM_BYTES
#   <prefix>_FOUND       TRUE when loom_pkg defines the configuration
function(loom_rtl_config_params cfg prefix)
  set(pkg ${LOOM_ROOT}/rtl/generated/loom_pkg.sv)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${pkg})
  file(READ ${pkg} text)
  string(TOUPPER ${cfg} up)
  set(found TRUE)
  foreach(key CORES ARRAY_ROWS ARRAY_COLS IN_KIB WGT_KIB ACC_KIB OUT_KIB PARAM_KIB MEM_PORTS MEM_WIDTH_BITS
              SEMAPHORES RING_DEPTH)
    if(text MATCHES "CFG_${up}_${key}[ \t]*=[ \t]*([0-9]+)")
      set(${key} ${CMAKE_MATCH_1})
    else()
      set(found FALSE)
    endif()
  endforeach()
  set(${prefix}_FOUND ${found} PARENT_SCOPE)
  if(NOT found)
    return()
  endif()
  math(EXPR mem_bytes "${MEM_WIDTH_BITS} / 8")
  math(EXPR cols4 "${ARRAY_COLS} * 4")
  # SpW = max(Cols*4, MemBytes): a scratchpad word holds a full array row of
  # 32-bit accumulators and at least one memory beat (docs/rtl-core.md).
  if(cols4 GREATER mem_bytes)
    set(spw ${cols4})
  else()
    set(spw ${mem_bytes})
  endif()
  math(EXPR in_b "${IN_KIB} * 1024")
  math(EXPR wgt_b "${WGT_KIB} * 1024")
  math(EXPR acc_b "${ACC_KIB} * 1024")
  math(EXPR out_b "${OUT_KIB} * 1024")
  math(EXPR param_b "${PARAM_KIB} * 1024")
  set(${prefix}_GFLAGS
      -GNumCores=${CORES} -GRows=${ARRAY_ROWS} -GCols=${ARRAY_COLS}
      -GInBytes=${in_b} -GWgtBytes=${wgt_b} -GAccBytes=${acc_b} -GOutBytes=${out_b} -GParamBytes=${param_b}
      -GMemPorts=${MEM_PORTS} -GMemBytes=${mem_bytes} -GSpW=${spw} -GNumSems=${SEMAPHORES}
      -GRingDepth=${RING_DEPTH}
      PARENT_SCOPE)
  set(${prefix}_CORES ${CORES} PARENT_SCOPE)
  set(${prefix}_ROWS ${ARRAY_ROWS} PARENT_SCOPE)
  set(${prefix}_COLS ${ARRAY_COLS} PARENT_SCOPE)
  set(${prefix}_MEM_PORTS ${MEM_PORTS} PARENT_SCOPE)
  set(${prefix}_MEM_BYTES ${mem_bytes} PARENT_SCOPE)
endfunction()
