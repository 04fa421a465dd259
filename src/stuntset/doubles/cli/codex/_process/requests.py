"""Requests to the fake ``codex app-server`` as the real server checks them: the methods it
knows, the JSON-RPC error, and the validation of ``params`` with the texts serde and the
``uuid`` crate write (observed from codex-cli 0.163.0).

Runs in the fake process (built-ins only, see ``_runtime``); ``app_server`` answers with it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "KNOWN",
    "KNOWN_METHODS",
    "NO_PARAMS",
    "RpcError",
    "check_input",
    "input_text",
    "invalid",
    "parse_thread_id",
    "require",
    "serde_found",
    "texts",
]

#: Client request methods the real 0.163.0 server knows (the list its "unknown variant"
#: error prints, as far as the real server prints it).
_KNOWN_TEXT = (
    "initialize server/diagnostics userVerification/status userVerification/enroll "
    "userVerification/delete userVerification/verify userVerification/cancel thread/start "
    "thread/resume thread/fork thread/archive thread/delete thread/unsubscribe "
    "thread/increment_elicitation thread/decrement_elicitation thread/name/set "
    "thread/prediction/request thread/goal/set thread/goal/get thread/goal/clear "
    "thread/queue/add thread/queue/list thread/queue/update thread/queue/delete "
    "thread/queue/reorder thread/queue/start thread/metadata/update thread/attachment/add "
    "thread/attachment/list thread/attachmentOwner/list thread/attachment/remove "
    "thread/section/move thread/settings/update thread/memoryMode/set memory/status "
    "memory/reset rollout/compress thread/unarchive thread/compact/start thread/shellCommand "
    "thread/approveGuardianDeniedAction thread/backgroundTerminals/clean "
    "thread/backgroundTerminals/list thread/backgroundTerminals/terminate thread/revert "
    "thread/list project/list project/read project/create project/import project/update "
    "project/move project/delete threadSection/list threadSection/create threadSection/update "
    "threadSection/delete thread/search thread/searchOccurrences thread/loaded/list "
    "thread/read thread/readState/update thread/turns/list thread/items/list "
    "thread/items/read thread/inject_items skills/list skills/extraRoots/set hooks/list "
    "marketplace/add marketplace/remove marketplace/upgrade plugin/list plugin/search "
    "plugin/installed plugin/reconcile plugin/read plugin/skill/read plugin/share/save "
    "plugin/share/updateTargets plugin/share/list plugin/share/checkout plugin/share/delete "
    "app/read app/list app/installed fs/readFile fs/writeFile fs/createDirectory "
    "fs/getMetadata fs/readDirectory fs/remove fs/copy fs/watch fs/unwatch "
    "skills/config/write plugin/install plugin/uninstall turn/start turn/settings/update "
    "turn/steer turn/interrupt thread/realtime/start thread/realtime/appendAudio "
    "thread/realtime/appendText thread/realtime/appendSpeech thread/realtime/stop "
    "thread/timeline/list thread/realtime/listVoices review/start model/list "
    "account/gatewayOAuth/read account/gatewayOAuth/login account/gatewayOAuth/cancel "
    "modelProvider/capabilities/read experimentalFeature/list permissionProfile/list "
    "experimentalFeature/enablement/set remoteControl/enable remoteControl/disable "
    "remoteControl/status/read remoteControl/pairing/start remoteControl/pairing/status "
    "remoteControl/client/list remoteControl/client/revoke collaborationMode/list "
    "mock/experimentalMethod environment/add environment/info account/read "
    "account/login/start account/login/cancel account/logout account/rateLimits/read "
    "command/exec config/read config/value/write config/batchWrite"
)
KNOWN_METHODS = tuple(_KNOWN_TEXT.split())
KNOWN = frozenset(KNOWN_METHODS)
NO_PARAMS = frozenset({"account/logout", "account/rateLimits/read", "config/read"})


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def invalid(message: str) -> RpcError:
    return RpcError(-32600, message)


def require(params: dict[str, Any], field: str) -> Any:
    if field not in params:
        raise invalid(f"Invalid request: missing field `{field}`")
    return params[field]


def texts(items: Any) -> list[str]:
    return [
        str(item.get("text", ""))
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict) and item.get("type") == "text"
    ]


def input_text(items: Any) -> str:
    return "\n".join(texts(items))


def serde_found(value: Any) -> str:
    """How serde names an unexpected JSON value in "invalid type: X, expected Y"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f"string {_quoted(value)}"
    return "sequence" if isinstance(value, list) else "map"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


#: The ``UserInput`` variants ``turn/start`` accepts, and the field each one requires.
_INPUT_KINDS = {
    "text": "text",
    "image": "url",
    "localImage": "path",
    "audio": "url",
    "localAudio": "path",
    "skill": "name",
    "mention": "name",
}


def check_input(items: Any) -> None:
    """``turn/start``'s ``input`` as serde checks it (texts observed from the real server)."""
    if not isinstance(items, list):
        raise invalid(f"Invalid request: invalid type: {serde_found(items)}, expected a sequence")
    for item in items:
        if not isinstance(item, dict):
            raise invalid(
                f"Invalid request: invalid type: {serde_found(item)}, expected internally "
                f"tagged enum UserInput"
            )
        kind = item.get("type")
        if "type" not in item:
            raise invalid("Invalid request: missing field `type`")
        if kind not in _INPUT_KINDS:
            expected = ", ".join(f"`{k}`" for k in _INPUT_KINDS)
            raise invalid(f"Invalid request: unknown variant `{kind}`, expected one of {expected}")
        if _INPUT_KINDS[kind] not in item:
            raise invalid(f"Invalid request: missing field `{_INPUT_KINDS[kind]}`")


_HEX = frozenset("0123456789abcdefABCDEF")


def parse_thread_id(value: str) -> str:
    """The thread id as a hyphenated UUID, or ``-32600`` "invalid thread id: …" worded as
    the real server (the Rust ``uuid`` crate) words it (observed)."""
    text = value[9:] if value.startswith("urn:uuid:") else value
    offset = len(value) - len(text)
    for index, char in enumerate(text):
        if char not in _HEX and char != "-":
            raise invalid(
                "invalid thread id: invalid character: expected an optional prefix of "
                f"`urn:uuid:` followed by [0-9a-fA-F-], found `{char}` at {index + offset + 1}"
            )
    if "-" not in text:
        if len(text) != 32:
            raise invalid(
                f"invalid thread id: invalid length: expected length 32 for simple format, "
                f"found {len(text)}"
            )
        text = f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    groups = text.split("-")
    if len(groups) != 5:
        raise invalid(f"invalid thread id: invalid group count: expected 5, found {len(groups)}")
    for number, (group, size) in enumerate(zip(groups, (8, 4, 4, 4, 12), strict=True)):
        if len(group) != size:
            raise invalid(
                f"invalid thread id: invalid group length in group {number}: expected "
                f"{size}, found {len(group)}"
            )
    return text.lower()
