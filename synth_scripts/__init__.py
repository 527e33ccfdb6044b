"""synth_scripts."""
