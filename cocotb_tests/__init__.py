"""cocotb_tests."""
