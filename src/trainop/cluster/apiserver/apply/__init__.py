"""Server-side apply: ``apply`` (merge, conflicts), ``managedfields``, ``fieldsets`` (FieldsV1),
``shapes`` (list and map types)."""
