# OpenSTA power of one mapped design; the runner (synth_scripts/flow.py) fills the fields and
# puts read_liberty in front.
read_verilog {netlist}
link_design {top}
create_clock -name clk -period {period} {clock_ports}
{activities}
puts "@@MH-BEGIN {top}"
report_power -digits 8
report_worst_slack -digits 4
puts "@@MH-END {top}"
