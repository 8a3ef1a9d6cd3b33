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


# What a column of the warehouse holds, as the UI's column schema shows it: first the columns many tables
# share, then those of one table (table.column).
_BATCH = "the conversation batch (a landed file, or a chunk of one) the row belongs to: the partition key"
COLUMN_DESCRIPTIONS = {
    "ranking_calibrations.measured_at": "when the home's views were measured",
    "ranking_calibrations.conversations": "the home's current conversations then (measured again at twice as many)",
    "ranking_calibrations.queries": "pseudo-queries measured (0: too few, the text views vote)",
    "ranking_calibrations.weights_json": "each voting view's weight as JSON; a view not named has no vote",
    "ranking_calibrations.report_json": "each view's nDCG@10 alone, the voting views' together, and a note, as JSON",
    "batch_key": _BATCH,
    "dialogue_id": "the conversation's id, as the source gave it",
    "content_hash": "hash of the conversation's landed content: a changed conversation gets a new one",
    "source_file": "the inbox file it came from",
    "landed_at": "when the file landed",
    "backend": "what produced the row: the embedded backend (embedded/1) or the LLM model",
    "raw_dialogues.turn_index": "the turn's position in the conversation, from 0",
    "raw_dialogues.role": "user (the asker) or agent (a helper)",
    "raw_dialogues.speaker": "the speaker, anonymized (user1, agent1, ...)",
    "raw_dialogues.text": "what the turn says, redacted (names, mentions, e-mails, phones, IPs replaced)",
    "raw_dialogues.ts": "when the turn was written, if the source says",
    "raw_dialogues.source_format": "the format it was parsed as (jsonl, msdialog, turn_csv, ...)",
    "raw_dialogues.accepted": "the source marks the turn as the accepted answer (null: landed before this was kept)",
    "raw_dialogues.source_fields": "the record's own fields (a forum's category, a ticket's queue) as a JSON object",
    "quarantine.position": "where in the file: line or record index",
    "quarantine.reason": "why the record was rejected",
    "quarantine.raw_excerpt": "the start of the rejected record",
    "candidate_schemas.column_name": "the column the conversation proposes, normalized to snake_case",
    "candidate_schemas.column_type": "its canonical type: int, string, float, boolean, date or datetime",
    "candidate_schemas.meaning": "what the column means",
    "candidate_schemas.constraints": "constraints a value must meet (a pattern, a range, allowed values)",
    "candidate_schemas.note": "where the value was found and by which detector",
    "candidate_schemas.example_value": "the value this conversation holds for it",
    "candidate_schemas.relevance": "how relevant the column is to the conversation's problem, 0..1",
    "candidate_schemas.answerability": "how well the conversation answers it, 0..1",
    "candidate_schemas.overall": "the overall score, 0..1",
    "candidate_schemas.justification": "why the column was proposed",
    "candidate_schemas.signal": "the concept the column stands for (several names may share one)",
    "candidate_schemas.problem": "the conversation's problem, as the proposal read it",
    "metadata_versions.version": "the version of M*, from 1",
    "metadata_versions.fingerprint": "hash of the column definitions: equal fingerprints, equal M*",
    "metadata_versions.n_columns": "how many columns this version has",
    "metadata_versions.columns_json": "the columns: name, type, meaning, constraints, aliases, support",
    "metadata_versions.created_at": "when this version was made",
    "validated_rows.column_name": "the column of M* the value is for",
    "validated_rows.value": "the value as stored: null when a gate failed or the conversation does not say",
    "validated_rows.raw_value": "the value as extracted, before the gates",
    "validated_rows.evidence": "the words of the conversation that support it",
    "validated_rows.semantic_passed": "whether the conversation's text supports the value",
    "validated_rows.semantic_reason": "why the semantic gate decided so",
    "validated_rows.structural_passed": "whether the value fits the column's type and constraints",
    "validated_rows.structural_reason": "why the structural gate decided so",
    "validated_rows.metadata_version": "the version of M* the row was extracted against",
    "validated_rows.span_turn": "the turn holding the value's exact words (null when no turn holds them)",
    "validated_rows.span_start": "where the value starts in that turn's text (a character offset)",
    "validated_rows.span_end": "where it ends (exclusive): text[span_start:span_end] is the value as written",
    "pseudo_documents.issue_queries": "questions the asker's side answers (JSON list)",
    "pseudo_documents.solution_queries": "questions the helper's side answers (JSON list)",
    "pseudo_documents.issue_document": "the issue-centric pseudo-document: the issue queries joined",
    "pseudo_documents.solution_document": "the solution-centric pseudo-document: the solution queries joined",
    "graph_nodes.node_id": "the issue-solution unit's id",
    "graph_nodes.issue": "what the user asked or said in this unit",
    "graph_nodes.answer": "the helper's answer to it",
    "graph_nodes.turn_start": "the unit's first turn",
    "graph_nodes.turn_end": "the unit's last turn",
    "cluster_assignments.view": "the feature view: semantic, structural or heuristic",
    "cluster_assignments.cluster_id": "the KMeans cluster of that view the row falls in",
    "cluster_assignments.distance": "distance to the cluster's centroid",
    "cluster_assignments.is_representative": "one of the members a query's route is compared with",
    "cluster_assignments.model_version": "the fitted clustering model",
    "cluster_assignments.text_hash": "hash of the linearized row that was assigned",
    "value_mentions.value": "a short value of the governed table, or one word of a value of several words",
    "value_mentions.conversations": "how many current conversations mention it in their text",
}


def column_schema(table: str) -> dg.TableSchema:
    return dg.TableSchema(columns=[
        dg.TableColumn(name, sql.split()[0].lower(),
                       description=COLUMN_DESCRIPTIONS.get(f"{table}.{name}") or COLUMN_DESCRIPTIONS.get(name),
                       constraints=dg.TableColumnConstraints(nullable="NOT NULL" not in sql))
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
