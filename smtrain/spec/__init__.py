"""Stage 1, YAML -> Spec: the job spec file read, typed and checked, or every problem at its file:line:column.

    yaml_source.py  YAML node graph -> plain data plus a SourceMap of positions; ${VAR} expansion
    model.py        the pydantic models of the spec, --set overrides, load_spec(), the JSON Schema
    problems.py     Problem / SpecError: what is wrong, where (file:line:column and dotted field)
    units.py        sizes (GB, GiB), durations (90m, 6h, 1d), --since values

May import: the shared modules (smtrain.errors, exit_codes, aws_config). Nothing else of smtrain.
"""
