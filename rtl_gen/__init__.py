"""rtl_gen."""
