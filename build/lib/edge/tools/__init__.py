"""Tools the model can call, the registry that runs them and the policy gate in front."""
