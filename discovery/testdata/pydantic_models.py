"""Pydantic twins of the Go event types the golden schemas cover.

Regenerate the golden files with pydantic v2 (2.13 was used):

    python3 discovery/testdata/pydantic_models.py discovery/testdata

Each model mirrors the Go declaration by the rules of discovery.Schema:
event:"required" -> no default; event:"default=v" -> = v; an untagged
pointer, slice or map -> X | None = None; an untagged json.RawMessage ->
Any = None; another untagged field -> required.
"""
import json
import sys
import time
from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class LocaleString(BaseModel):
    de: str | None = None
    en: str | None = None
    fr: str | None = None
    it: str | None = None


class TenantIdentity(BaseModel):
    id: str
    name: str
    access_rules: list[str]


class UserIdentity(BaseModel):
    id: str
    name: str
    email: str
    roles: list[str]
    acting_within_tenant: TenantIdentity | None = None
    is_sys_admin: bool | None = None


class UserUploadedFile(BaseModel):
    filename: str
    file_type: str
    file_id: str


class ChatFeature(str, Enum):
    web_search = "web_search"
    code_interpreter = "code_interpreter"
    image_generation = "image_generation"


class TextBlock(BaseModel):
    block_type: Literal["text"] = "text"
    text: str


class ImageBlock(BaseModel):
    block_type: Literal["image"] = "image"
    image: bytes | None = None
    path: str | None = None
    url: str | None = None
    image_mimetype: str | None = None
    detail: str | None = None


class AudioBlock(BaseModel):
    block_type: Literal["audio"] = "audio"
    audio: bytes | None = None
    path: str | None = None
    url: str | None = None
    format: str | None = None


class VideoBlock(BaseModel):
    block_type: Literal["video"] = "video"
    video: bytes | None = None
    path: str | None = None
    url: str | None = None
    video_mimetype: str | None = None
    detail: str | None = None
    fps: float | None = None


class DocumentBlock(BaseModel):
    block_type: Literal["document"] = "document"
    data: bytes | None = None
    path: str | None = None
    url: str | None = None
    title: str | None = None
    document_mimetype: str | None = None


class CacheControl(BaseModel):
    type: str
    ttl: str | None = None


class CacheBlock(BaseModel):
    block_type: Literal["cache"] = "cache"
    cache_control: CacheControl


class CitableBlock(BaseModel):
    block_type: Literal["citable"] = "citable"
    title: str
    source: str
    content: list[Any] | None = None


class CitationBlock(BaseModel):
    block_type: Literal["citation"] = "citation"
    cited_content: Any = None
    source: str
    title: str
    additional_location_info: dict[str, Any] | None = None


class ChatMessage(BaseModel):
    role: str = "user"
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    blocks: list[TextBlock | ImageBlock | AudioBlock | VideoBlock | DocumentBlock | CacheBlock | CitableBlock | CitationBlock] = Field(default_factory=list)


class BaseEvent(BaseModel):
    model_config = ConfigDict(extra="allow")
    event_id: str = Field(default_factory=lambda: "0" * 24)
    created_at: int = Field(default_factory=time.time_ns)


class DisplayEvent(BaseEvent):
    display_name: LocaleString | None = None
    display_description: LocaleString | None = None


class UserMessageEvent(DisplayEvent):
    locale: str = "de"
    user: UserIdentity
    messages: list[ChatMessage] = []
    files: list[UserUploadedFile] | None = None
    requested_features: list[ChatFeature] = []


class ExceptionEvent(DisplayEvent):
    message: str
    http_status_code: int = 500


class CronStartEvent(DisplayEvent):
    locale: str = "de"
    user: UserIdentity | None = None
    scheduled_for: datetime


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    for model in (UserMessageEvent, ExceptionEvent, CronStartEvent):
        with open(f"{out}/pydantic_{model.__name__}.json", "w") as f:
            json.dump(model.model_json_schema(), f, indent=1, sort_keys=True)
            f.write("\n")
