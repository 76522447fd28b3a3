-- The tables of the local adapters of the RetrieveOrGenerate workflow, in
-- schema problembank. Applied by local.Migrate; every statement is
-- idempotent.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE SCHEMA IF NOT EXISTS problembank;

-- Stored solution documents, addressed by content: storage_key is
-- 'sha256:' || the SHA-256 of body.
CREATE TABLE IF NOT EXISTS problembank.contents (
    storage_key  TEXT PRIMARY KEY,
    content_type TEXT NOT NULL,
    body         TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Registered problems, one per signature.
CREATE TABLE IF NOT EXISTS problembank.problems (
    id              UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    signature       TEXT NOT NULL UNIQUE,
    normalized_text TEXT NOT NULL,
    phash           TEXT NOT NULL DEFAULT '' CHECK (phash = '' OR phash ~ '^[0-9a-f]{16}$'),
    topic_tags      TEXT[] NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS problems_phash_idx ON problembank.problems (phash) WHERE phash <> '';

-- Versions of a problem's assets; version_no counts from 1 per
-- (problem, asset type). The same stored content is the same version.
CREATE TABLE IF NOT EXISTS problembank.asset_versions (
    id          UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    problem_id  UUID NOT NULL REFERENCES problembank.problems (id),
    asset_type  TEXT NOT NULL,
    version_no  INTEGER NOT NULL CHECK (version_no >= 1),
    storage_key TEXT NOT NULL,
    provenance  TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (problem_id, asset_type, version_no),
    UNIQUE (problem_id, asset_type, storage_key)
);

-- The search index: one document per problem, pointing at the asset
-- version it serves.
CREATE TABLE IF NOT EXISTS problembank.problem_index (
    problem_id       UUID PRIMARY KEY REFERENCES problembank.problems (id),
    asset_version_id UUID NOT NULL REFERENCES problembank.asset_versions (id),
    signature        TEXT NOT NULL,
    normalized_text  TEXT NOT NULL,
    phash            TEXT NOT NULL DEFAULT '',
    topic_tags       TEXT[] NOT NULL DEFAULT '{}',
    indexed_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS problem_index_text_trgm_idx
    ON problembank.problem_index USING gin (normalized_text gin_trgm_ops);

-- Videos of solutions, one per solution asset version, written by the
-- local video renderer (a stub: it records the request and a storage key).
CREATE TABLE IF NOT EXISTS problembank.videos (
    solution_asset_version_id UUID PRIMARY KEY REFERENCES problembank.asset_versions (id),
    problem_signature         TEXT NOT NULL,
    video_mode                TEXT NOT NULL,
    storage_key               TEXT NOT NULL,
    renders                   INTEGER NOT NULL DEFAULT 1 CHECK (renders >= 1),
    rendered_at               TIMESTAMPTZ NOT NULL DEFAULT now()
);
