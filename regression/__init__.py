"""The cocotb regression as a library: build the generated Verilog, run benches, summarise."""
