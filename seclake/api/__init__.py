"""The HTTP face of seclake: app factory, envelope, call registry, calls."""
