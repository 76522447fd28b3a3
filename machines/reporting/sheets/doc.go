// Package sheets writes a workflow's rows to a tab of a Google Sheets
// spreadsheet through the Sheets API v4 values endpoints, with
// apiclient's retries, following the step engine contract's rerun rule:
// clear, then write.
//
// Writer.Replace first clears the whole tab
// (POST /v4/spreadsheets/{spreadsheetId}/values/{range}:clear, an empty
// JSON body, the range being the quoted tab name), then writes the rows
// from its top-left cell (PUT /v4/spreadsheets/{spreadsheetId}/values/{range}?valueInputOption=RAW,
// with the ValueRange {"range", "majorDimension": "ROWS", "values"}, the
// range being 'Tab'!A1). The tab then holds exactly the rows given, so a
// workflow run twice, or a run rerun under its id, leaves no duplicated and
// no stale rows. It never appends.
//
// The values are written RAW: stored as given, not parsed as a user's
// typing would be. A failed clear writes nothing; a write that fails after
// the clear leaves the tab empty, and running the step again replaces it
// whole. Errors are apiclient's: *apiclient.APIRetryExhausted when the
// retries ran out (the step then fails with error type APIRetryExhausted
// and the operation sheets.spreadsheets.values.clear or .update), and
// *apiclient.APIError for another status.
package sheets
