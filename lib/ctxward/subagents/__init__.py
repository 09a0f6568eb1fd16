"""Sub-agent context economy (G0/G7/G8)."""
