"""``[network] allow_hosts`` is the user's alone: a project layer's is ignored (with a warning
naming the file), whatever it approved; the user's own reaches the run's NetPolicy."""

from nyzhi.config import load_config
from nyzhi.config.project_trust import load_trusted
from nyzhi.core.runtime.assembly import net_policy


def test_only_the_users_own_config_allows_hosts(env):
    env.write(env.project_config, "[network]\nallow_hosts = ['169.254.169.254']\n")
    env.write(env.local_config, "[network]\nallow_hosts = ['127.0.0.1']\n")
    loaded = load_config()
    assert loaded.config.network.allow_hosts == ()
    warned = [str(w) for w in loaded.warnings if w.key == "network"]
    assert len(warned) == 2 and all("only your own config may set it" in w for w in warned)
    assert str(env.project_config) in warned[0]
    # even approving the project's gated parts never applies this
    trusted, _ = load_trusted(None, approve=True)
    assert trusted.config.network.allow_hosts == ()

    env.write(env.global_config, "[network]\nallow_hosts = ['127.0.0.1:8080', 'bad:port']\n")
    loaded = load_config()
    assert loaded.config.network.allow_hosts == ("127.0.0.1:8080", "bad:port")
    policy, notices = net_policy(loaded.config, None)
    assert [a.port for a in policy.allow] == [8080]
    assert notices == ["[network] allow_hosts: 'bad:port' is not HOST[:PORT]; left out"]
