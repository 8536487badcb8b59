"""The project model: what dslint knows about a whole project (launchers, configs, engines across modules)."""
