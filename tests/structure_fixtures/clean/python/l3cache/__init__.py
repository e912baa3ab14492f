"""The fixture's package."""
