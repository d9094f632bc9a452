package postgres

import "github.com/scheduler-run/scheduler/queue/store"

// The incidents' and silences' statements (store.IncidentStatements).

const incidentColumns = store.IncidentColumns

var incidentStatements = store.IncidentStatements{
	// The conflict target is incidents_open: one open incident per
	// schedule and kind, whichever node counts; a node racing another's
	// insert waits for it and then counts on its row.
	CountIncident: `INSERT INTO incidents (schedule, kind, open, count, first_at, last_at, opened_at, notified_at)
VALUES ($1, $2, true, 1, $3, $3, $4, $4)
ON CONFLICT (schedule, kind) WHERE open DO UPDATE SET count = incidents.count + 1,
first_at = least(incidents.first_at, excluded.first_at), last_at = greatest(incidents.last_at, excluded.last_at)
RETURNING ` + incidentColumns,
	TagAlarm: `UPDATE alarms SET incident_id = $1 WHERE id = $2`,
	Remind: `UPDATE incidents SET reminders = reminders + 1, notified_at = $1
WHERE id = $2 AND open AND acked_at IS NULL AND reminders = $3 RETURNING ` + incidentColumns,
	Resolve: `UPDATE incidents SET open = false, resolved_at = $1
WHERE schedule = $2 AND open AND last_at <= $3 AND NOT EXISTS (
	SELECT 1 FROM jobs n WHERE n.alarm_key = 'incident:' || incidents.id AND n.state IN ('pending', 'running'))
RETURNING ` + incidentColumns,
	Waiting:      `SELECT count(*) FROM incidents WHERE schedule = $1 AND open AND last_at <= $2`,
	Silenced:     `SELECT until_at FROM silences WHERE schedule = $1 AND until_at > $2`,
	Acknowledge:  `UPDATE incidents SET acked_at = $1, acked_by = $2 WHERE id = $3 AND open AND acked_at IS NULL RETURNING ` + incidentColumns,
	IncidentByID: `SELECT ` + incidentColumns + ` FROM incidents WHERE id = $1`,
	OpenIncidents: `SELECT ` + incidentColumns + `,
	EXISTS (SELECT 1 FROM jobs n WHERE n.alarm_key = 'incident:' || incidents.id AND n.state IN ('pending', 'running'))
FROM incidents WHERE open ORDER BY id LIMIT $1`,
	IncidentsAll: `SELECT ` + incidentColumns + ` FROM incidents ORDER BY open DESC, id DESC LIMIT $1`,
	IncidentsOf:  `SELECT ` + incidentColumns + ` FROM incidents WHERE schedule = $1 ORDER BY open DESC, id DESC LIMIT $2`,
	SetSilence: `INSERT INTO silences (schedule, until_at, silenced_by, silenced_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (schedule) DO UPDATE SET until_at = excluded.until_at, silenced_by = excluded.silenced_by,
silenced_at = excluded.silenced_at`,
	Unsilence:      `DELETE FROM silences WHERE schedule = $1`,
	Silences:       `SELECT schedule, until_at, silenced_by, silenced_at FROM silences WHERE until_at > $1 ORDER BY schedule`,
	PurgeIncidents: `DELETE FROM incidents WHERE id IN (SELECT id FROM incidents WHERE NOT open AND resolved_at < $1 LIMIT $2)`,
}
