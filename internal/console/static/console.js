// fsmctl console: the little the pages do in the browser. No data is ever
// written as HTML: text goes through textContent, classes through classList.
"use strict";

// Forms with data-confirm ask before they post.
document.addEventListener("submit", function (ev) {
	var form = ev.target;
	var question = form.getAttribute && form.getAttribute("data-confirm");
	if (question && !window.confirm(question)) {
		ev.preventDefault();
	}
});

// A machine's heatmap refreshes its counts from heat.json.
(function () {
	var status = document.getElementById("heat-status");
	if (!status) {
		return;
	}
	var url = status.getAttribute("data-heat-url");
	var every = parseInt(status.getAttribute("data-refresh-ms"), 10) || 5000;
	var diagram = document.getElementById("diagram");
	function apply(data) {
		var groups = diagram.querySelectorAll("g.state");
		for (var i = 0; i < groups.length; i++) {
			var g = groups[i];
			var st = data.states[g.getAttribute("data-state")];
			if (!st) {
				continue;
			}
			for (var level = 0; level <= 5; level++) {
				g.classList.toggle("heat-" + level, level === st.level);
			}
			g.classList.toggle("stuck", st.stuck);
			var count = g.querySelector("text.count");
			var median = g.querySelector("text.median");
			if (count) { count.textContent = st.count; }
			if (median) { median.textContent = st.median; }
		}
		// The table of states: runs now, stuck, parked.
		var rows = document.querySelectorAll("#heat tbody tr");
		for (var j = 0; j < rows.length; j++) {
			var row = data.states[rows[j].getAttribute("data-state")];
			var cells = rows[j].querySelectorAll("td");
			if (row && cells.length >= 4) {
				cells[1].textContent = String(row.runs);
				cells[2].textContent = String(row.stuckRuns);
				cells[3].textContent = String(row.parkedRuns);
			}
		}
		status.textContent = "live, updated " + new Date(data.at).toLocaleTimeString();
		status.classList.remove("stale");
	}
	function tick() {
		fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
			.then(function (r) {
				if (!r.ok) { throw new Error("HTTP " + r.status); }
				return r.json();
			})
			.then(apply)
			.catch(function (err) {
				status.textContent = "not updated: " + err.message;
				status.classList.add("stale");
			})
			.then(function () { window.setTimeout(tick, every); });
	}
	window.setTimeout(tick, every);
})();
