"""Git-native storage: notes keyed by object ids, and task records under refs/pilot/tasks/."""
