"""What the Dagster UI shows about each asset beyond its code: the column schema of the warehouse table it
writes, its code version (bump it when the same input would now give a different output) and its owners."""

import dagster as dg

from sarag_assets.core import warehouse

# asset -> the warehouse table whose columns it writes (its main table; see README "The asset graph")
TABLE_OF = {
    "raw_dialogues": "raw_dialogues",
    "quarantine": "quarantine",
    "candidate_schemas": "candidate_schemas",
    "governed_metadata": "metadata_versions",
    "validated_rows": "validated_rows",
    "pseudo_documents": "pseudo_documents",
    "dialogue_graphs": "graph_nodes",
    "feature_clusters": "cluster_assignments",
    "value_mentions": "value_mentions",
    "ranking_calibration": "ranking_calibrations",
}
CODE_VERSIONS = {
    "raw_dialogues": "1", "quarantine": "1", "candidate_schemas": "1", "governed_metadata": "1",
    "validated_rows": "1", "pseudo_documents": "1", "dialogue_graphs": "1", "feature_clusters": "1",
    "value_mentions": "1", "ranking_calibration": "1", "lancedb_indices": "1", "staged_state": "1",
    "published_state": "1",
    "table_quality_report": "1", "preference_pairs": "2", "retrieval_evaluation": "1",
}


def column_schema(table: str) -> dg.TableSchema:
    return dg.TableSchema(columns=[
        dg.TableColumn(name, sql.split()[0].lower(), constraints=dg.TableColumnConstraints(nullable="NOT NULL" not in sql))
        for name, sql in warehouse.TABLES[table]])


def _describe(spec: dg.AssetSpec, owners: list[str]) -> dg.AssetSpec:
    name = spec.key.to_user_string()
    metadata = dict(spec.metadata or {})
    if name in TABLE_OF:
        metadata["dagster/column_schema"] = column_schema(TABLE_OF[name])
        metadata["dagster/table_name"] = f"warehouse.{TABLE_OF[name]}"
    return spec.replace_attributes(metadata=metadata, code_version=CODE_VERSIONS[name], owners=owners)


def catalogued(assets: list, owners: list[str]) -> list:
    """The assets with their column schemas, code versions and owners (the `asset_owners` setting)."""
    return list(dg.map_asset_specs(lambda spec: _describe(spec, owners), assets))
