package sqlite

import "github.com/scheduler-run/scheduler/queue/store"

// The incidents' and silences' statements (store.IncidentStatements).

const incidentColumns = store.IncidentColumns

var incidentStatements = store.IncidentStatements{
	// The conflict target is incidents_open: one open incident per
	// schedule and kind, whichever process counts.
	CountIncident: `INSERT INTO incidents (schedule, kind, open, count, first_at, last_at, opened_at, notified_at)
VALUES (?1, ?2, 1, 1, ?3, ?3, ?4, ?4)
ON CONFLICT (schedule, kind) WHERE open = 1 DO UPDATE SET count = count + 1,
first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at)
RETURNING ` + incidentColumns,
	TagAlarm: `UPDATE alarms SET incident_id = ? WHERE id = ?`,
	Remind: `UPDATE incidents SET reminders = reminders + 1, notified_at = ?1
WHERE id = ?2 AND open = 1 AND acked_at IS NULL AND reminders = ?3 RETURNING ` + incidentColumns,
	Resolve: `UPDATE incidents SET open = 0, resolved_at = ?1
WHERE schedule = ?2 AND open = 1 AND last_at <= ?3 AND NOT EXISTS (
	SELECT 1 FROM jobs n WHERE n.alarm_key = 'incident:' || incidents.id AND n.state IN ('pending', 'running'))
RETURNING ` + incidentColumns,
	Waiting:      `SELECT count(*) FROM incidents WHERE schedule = ? AND open = 1 AND last_at <= ?`,
	Silenced:     `SELECT until_at FROM silences WHERE schedule = ? AND until_at > ?`,
	Acknowledge:  `UPDATE incidents SET acked_at = ?, acked_by = ? WHERE id = ? AND open = 1 AND acked_at IS NULL RETURNING ` + incidentColumns,
	IncidentByID: `SELECT ` + incidentColumns + ` FROM incidents WHERE id = ?`,
	OpenIncidents: `SELECT ` + incidentColumns + `,
	EXISTS (SELECT 1 FROM jobs n WHERE n.alarm_key = 'incident:' || incidents.id AND n.state IN ('pending', 'running'))
FROM incidents WHERE open = 1 ORDER BY id LIMIT ?`,
	// Open ones from incidents_open, then the newest closed by id.
	IncidentsAll: `SELECT ` + incidentColumns + ` FROM incidents ORDER BY open DESC, id DESC LIMIT ?`,
	IncidentsOf:  `SELECT ` + incidentColumns + ` FROM incidents WHERE schedule = ? ORDER BY open DESC, id DESC LIMIT ?`,
	SetSilence: `INSERT INTO silences (schedule, until_at, silenced_by, silenced_at) VALUES (?, ?, ?, ?)
ON CONFLICT (schedule) DO UPDATE SET until_at = excluded.until_at, silenced_by = excluded.silenced_by,
silenced_at = excluded.silenced_at`,
	Unsilence:      `DELETE FROM silences WHERE schedule = ?`,
	Silences:       `SELECT schedule, until_at, silenced_by, silenced_at FROM silences WHERE until_at > ? ORDER BY schedule`,
	PurgeIncidents: `DELETE FROM incidents WHERE id IN (SELECT id FROM incidents WHERE open = 0 AND resolved_at < ? LIMIT ?)`,
}
