-- name: InsertDefinition :execrows
INSERT INTO workflow_definitions (workflow_type, version, initial_state, digest, definition, created_at)
VALUES (@workflow_type, @version, @initial_state, @digest, @definition, coalesce(sqlc.narg('now')::timestamptz, now()))
ON CONFLICT (workflow_type, version) DO NOTHING;

-- name: InsertStates :exec
-- The states of a definition; parallel_states[n], regions[n] and
-- region_counts[n] place a leaf inside a region of a parallel state (an
-- empty text and zeros elsewhere).
INSERT INTO workflow_states (workflow_type, version, state, status, outcome, is_initial, parallel_state, region, regions)
SELECT @workflow_type::text, @version::int, u.state, u.status, nullif(u.outcome, ''), u.is_initial,
    nullif(u.parallel_state, ''), nullif(u.region, 0), nullif(u.regions, 0)
FROM (SELECT unnest(@states::text[]) AS state, unnest(@statuses::text[]) AS status,
        unnest(@outcomes::text[]) AS outcome, unnest(@initials::bool[]) AS is_initial,
        unnest(@parallel_states::text[]) AS parallel_state, unnest(@regions::int[]) AS region,
        unnest(@region_counts::int[]) AS regions) AS u;

-- name: InsertTransitions :exec
INSERT INTO workflow_transitions (workflow_type, version, from_state, event, to_state)
SELECT @workflow_type::text, @version::int, unnest(@from_states::text[]), unnest(@events::text[]),
    unnest(@to_states::text[])
ON CONFLICT DO NOTHING;

-- name: GetDefinition :one
SELECT workflow_type, version, initial_state, digest, definition
FROM workflow_definitions
WHERE workflow_type = @workflow_type AND version = @version;

-- name: ListDefinitions :many
SELECT workflow_type, version, initial_state, digest, created_at, definition
FROM workflow_definitions
ORDER BY workflow_type, version;
