"""energy_model."""
