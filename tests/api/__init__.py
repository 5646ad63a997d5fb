"""The library API (`import smtrain`) as a user calls it from Python or Jupyter: load, plan, dry_run, validate,
Job against the moto server, Metrics, what `import smtrain` loads, and that the library prints nothing."""
