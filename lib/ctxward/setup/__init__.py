"""Install, doctor and demo: setting ctxward up on a machine."""
