-- name: InsertDefinition :execrows
INSERT INTO workflow_definitions (workflow_type, version, initial_state, digest, definition, created_at)
VALUES (@workflow_type, @version, @initial_state, @digest, @definition, coalesce(sqlc.narg('now')::timestamptz, now()))
ON CONFLICT (workflow_type, version) DO NOTHING;

-- name: InsertStates :exec
INSERT INTO workflow_states (workflow_type, version, state, status, outcome, is_initial)
SELECT @workflow_type::text, @version::int, u.state, u.status, nullif(u.outcome, ''), u.is_initial
FROM (SELECT unnest(@states::text[]) AS state, unnest(@statuses::text[]) AS status,
        unnest(@outcomes::text[]) AS outcome, unnest(@initials::bool[]) AS is_initial) AS u;

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
