"""Each merge rule of docs/config.md, through load_config on real files."""

from nyzhi.config import load_config
from nyzhi.config.schema import McpHttpServer


def test_no_files_gives_defaults(env):
    loaded = load_config()
    assert loaded.layers == ()
    assert loaded.config.agent.max_steps == 100
    assert loaded.config.agent.auto_compact_threshold == 0.85
    assert loaded.source_of("agent.max_steps") == "default"


def test_scalars_override_global_project_local(env):
    env.write(env.global_config, "[agent]\nmax_steps = 10\ncustom_instructions = 'g'\n")
    env.write(env.project_config, "[agent]\nmax_steps = 20\n")
    env.write(env.local_config, "[agent]\nmax_steps = 30\n")
    loaded = load_config()
    assert loaded.config.agent.max_steps == 30
    assert loaded.config.agent.custom_instructions == "g"
    assert loaded.source_of("agent.max_steps") == "local"
    assert loaded.source_of("agent.custom_instructions") == "global"
    assert [layer.name for layer in loaded.layers] == ["global", "project", "local"]


def test_later_layer_can_set_value_back_to_default(env):
    env.write(env.global_config, "[agent.trust]\nmode = 'full'\n[agent.retry]\nmax_retries = 9\n")
    env.write(env.project_config, "[agent.trust]\nmode = 'off'\n[agent.retry]\nmax_retries = 3\n")
    loaded = load_config()
    assert loaded.config.agent.trust.mode == "off"
    assert loaded.config.agent.retry.max_retries == 3
    assert loaded.source_of("agent.trust.mode") == "project"


def test_maps_extend_and_entries_merge_field_by_field(env):
    env.write(env.global_config, """
[provider.openai]
model = "gpt-a"
api_key = "k1"
[provider.openai.headers]
X-One = "1"
[mcp.servers.a]
command = "srv-a"
""")
    env.write(env.project_config, """
[provider]
default = "openai"
[provider.openai]
model = "gpt-b"
[provider.openai.headers]
X-Two = "2"
[provider.groq]
model = "llama"
[mcp.servers.b]
url = "http://x"
""")
    cfg = load_config().config
    assert cfg.provider.default == "openai"
    assert cfg.provider.entries["openai"].model == "gpt-b"
    assert cfg.provider.entries["openai"].api_key == "k1"
    assert cfg.provider.entries["openai"].headers == {"X-One": "1", "X-Two": "2"}
    assert set(cfg.provider.entries) == {"openai", "groq"}
    assert set(cfg.mcp.servers) == {"a", "b"}


def test_mcp_server_and_role_entries_are_replaced_whole(env):
    env.write(env.global_config, """
[mcp.servers.x]
command = "old"
args = ["-v"]
[agent.agents.roles.reviewer]
model = "m1"
read_only = true
""")
    env.write(env.project_config, """
[mcp.servers.x]
url = "http://new"
[agent.agents.roles.reviewer]
description = "d"
""")
    cfg = load_config().config
    assert cfg.mcp.servers["x"] == McpHttpServer(url="http://new")
    role = cfg.agent.agents.roles["reviewer"]
    assert role.description == "d" and role.model is None and role.read_only is None


def test_hooks_and_commands_concatenate_global_first(env):
    env.write(env.global_config, """
[[agent.hooks]]
event = "after_turn"
command = "g"
[[agent.commands]]
name = "a"
prompt = "pa"
""")
    env.write(env.project_config, """
[[agent.hooks]]
event = "after_edit"
command = "p"
""")
    env.write(env.local_config, """
[[agent.hooks]]
event = "session_start"
command = "l"
[[agent.commands]]
name = "b"
prompt = "pb"
""")
    loaded = load_config()
    assert [h.command for h in loaded.config.agent.hooks] == ["g", "p", "l"]
    assert [c.name for c in loaded.config.agent.commands] == ["a", "b"]
    assert loaded.source_of("agent.hooks[1]") == "project"
    assert loaded.source_of("agent.commands[1]") == "local"


def test_deny_lists_and_index_exclude_are_unions(env):
    env.write(env.global_config, """
[agent.trust]
deny_tools = ["bash", "web_fetch"]
allow_tools = ["read"]
[index]
exclude = ["a"]
""")
    env.write(env.project_config, """
[agent.trust]
deny_tools = ["web_fetch", "git_commit"]
deny_paths = [".env"]
allow_tools = ["grep"]
[index]
exclude = ["b"]
""")
    loaded = load_config()
    trust = loaded.config.agent.trust
    assert trust.deny_tools == ("bash", "web_fetch", "git_commit")
    assert trust.deny_paths == (".env",)
    assert trust.allow_tools == ("grep",)  # other arrays: the later layer replaces
    assert loaded.config.index.exclude == ("a", "b")
    assert loaded.source_of("agent.trust.deny_tools") == "global+project"


def test_nodes_merge_by_name(env):
    env.write(env.global_config, """
[[nodes]]
name = "a"
host = "a.example"
[[nodes]]
name = "b"
host = "b.example"
""")
    env.write(env.project_config, """
[[nodes]]
name = "b"
host = "b2.example"
port = 2222
[[nodes]]
name = "c"
host = "c.example"
""")
    loaded = load_config()
    nodes = loaded.config.nodes
    assert [(n.name, n.host, n.port) for n in nodes] == [
        ("a", "a.example", 22), ("b", "b2.example", 2222), ("c", "c.example", 22)]
    assert loaded.source_of("nodes[0]") == "global"
    assert loaded.source_of("nodes[1]") == "project"


def test_type_change_in_later_layer_replaces(env):
    env.write(env.global_config, "[tui.colors]\naccent = '#fff'\n")
    env.write(env.project_config, "[tui]\ntheme = 'light'\n")
    cfg = load_config().config
    assert cfg.tui.theme == "light" and cfg.tui.colors == {"accent": "#fff"}


def test_with_overrides(env):
    env.write(env.global_config, "[provider]\ndefault = 'anthropic'\n")
    cfg = load_config().config
    out = cfg.with_overrides(model="m-1", trust="full", sandbox="read-only", max_steps=5)
    assert out.provider.entries["anthropic"].model == "m-1"
    assert out.agent.trust.mode == "full"
    assert out.agent.sandbox.level == "read-only"
    assert out.agent.max_steps == 5
    assert cfg.agent.trust.mode == "off"  # the original is untouched
    other = cfg.with_overrides(provider="groq", model="llama")
    assert other.provider.default == "groq"
    assert other.provider.entries["groq"].model == "llama"


def test_hook_as_table_gives_only_keys_that_were_set(env):
    env.write(env.global_config, "[[agent.hooks]]\nevent = 'after_edit'\ncommand = 'fmt {file}'\n"
                                 "paths = ['*.py']\ntimeout = 5\n")
    (hook,) = load_config().config.agent.hooks
    assert hook.as_table() == {"event": "after_edit", "command": "fmt {file}", "paths": ["*.py"],
                               "timeout": 5.0}
