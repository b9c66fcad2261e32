"""The model packages, one per checkpoint family (see litebert.specs): each registers its
ModelSpec on import. litebert.specs.BUILT_IN names them; nothing imports this package by
name but the registry, on first lookup."""
