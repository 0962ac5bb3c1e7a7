"""Config-driven CDC jobs: one YAML file describes source, transforms, transport and sink."""
