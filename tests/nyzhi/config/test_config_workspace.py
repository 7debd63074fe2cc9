from nyzhi.config import detect_workspace


def test_root_is_nearest_marker(tmp_path, env):
    for marker in (".nyzhi", ".claude"):
        root = tmp_path / marker.strip(".")
        (root / marker).mkdir(parents=True)
        deep = root / "a" / "b"
        deep.mkdir(parents=True)
        assert detect_workspace(deep).root == root.resolve()
    gitfile = tmp_path / "wt"
    (gitfile / "src").mkdir(parents=True)
    (gitfile / ".git").write_text("gitdir: /elsewhere\n")  # worktrees have a .git file
    assert detect_workspace(gitfile / "src").root == gitfile.resolve()


def test_nested_project_wins_over_outer(env):
    inner = env.project / "sub"
    (inner / ".nyzhi").mkdir(parents=True)
    assert detect_workspace(inner).root == inner.resolve()


def test_no_marker_means_cwd_and_user_nyzhi_home_is_not_a_marker(env):
    (env.home / ".nyzhi").mkdir()
    loose = env.home / "scratch" / "x"
    loose.mkdir(parents=True)
    ws = detect_workspace(loose)
    assert ws.root == loose.resolve()
    assert ws.config_source == "none"


def test_rules_order(env):
    root = env.project
    (root / ".nyzhi" / "rules").mkdir(parents=True)
    (root / "AGENTS.md").write_text("   \n")  # empty: skipped
    (root / ".nyzhi" / "rules.md").write_text("primary")
    (root / "CLAUDE.md").write_text("not used: a primary file was found")
    (root / "NYZHI.local.md").write_text("local")
    (root / ".nyzhi" / "local.md").write_text("not used either")
    (root / ".nyzhi" / "rules" / "b.md").write_text("rule b")
    (root / ".nyzhi" / "rules" / "a.md").write_text("rule a")
    (root / ".nyzhi" / "rules" / "c.txt").write_text("ignored")
    ws = detect_workspace(root)
    assert ws.rules_text == "primary\n\nlocal\n\nrule a\n\nrule b"
    assert [p.name for p in ws.rule_files] == ["rules.md", "NYZHI.local.md", "a.md", "b.md"]
    assert ws.config_source == "nyzhi"


def test_primary_rule_precedence(env):
    root = env.project
    (root / ".cursorrules").write_text("cursor")
    assert detect_workspace(root).rules_text == "cursor"
    (root / "CLAUDE.md").write_text("claude")
    assert detect_workspace(root).rules_text == "claude"
    (root / "AGENTS.md").write_text("agents")
    assert detect_workspace(root).rules_text == "agents"


def test_facts(env):
    (env.project / "pyproject.toml").write_text("")
    (env.project / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    ws = detect_workspace()
    assert ws.project_type == "python"
    assert ws.git_branch == "feature/x"
    assert ws.config_source == "git"
    assert ws.rules_text == "" and ws.rule_files == ()
    assert ws.project_config_path == env.project.resolve() / ".nyzhi" / "config.toml"
