// loom RTL source list: packages first, then leaf modules, then their parents.
+incdir+rtl/include
rtl/generated/loom_pkg.sv
rtl/generated/loom_csr.sv
rtl/fabric/loom_sem.sv
rtl/fabric/loom_axi_mux.sv
rtl/core/loom_rtl_pkg.sv
rtl/mem/loom_sp_ram.sv
rtl/mem/loom_dp_ram.sv
rtl/core/loom_requant.sv
rtl/core/loom_postop.sv
rtl/core/loom_systolic_pe.sv
rtl/core/loom_systolic_array.sv
